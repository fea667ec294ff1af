import { test, expect, signIn, hydrated, looksRight } from "./fixtures";
import { readFile } from "node:fs/promises";

test("a pipeline experiment page shows the verdict, the stage table and its charts", async ({ page }) => {
  await signIn(page, "e2e-viewer");
  await page.getByRole("link", { name: "Dedup: heavier MinHash" }).click();
  await expect(page.getByRole("heading", { level: 1 })).toContainText("Dedup: heavier MinHash");
  const banner = page.getByRole("region", { name: "Verdict" });
  await expect(banner).toContainText("regression");
  await expect(banner).toContainText("stage1-Map → Scatter: more CPU: CPU higher +27.5 %");
  const stages = page.locator("table.stages");
  await expect(stages.locator("tbody tr")).toHaveCount(3);
  await expect(stages.locator("tbody tr").first()).toContainText("+27.5 %");
  const charts = page.locator("svg.chart");
  await expect(charts).toHaveCount(5);
  await expect(page.getByRole("img", { name: "CPU per stage" })).toBeVisible();
  // The forest plot leads: the detected regression's interval against its margin.
  const forest = page.getByRole("img", { name: "CPU change per stage: interval against the margin" });
  await expect(forest).toBeVisible();
  await expect(forest.locator(".tips title").filter({ hasText: "stage1-Map → Scatter · heavier-minhash: +27.5 %" })).toContainText("detected");
  await expect(page.getByRole("img", { name: "Peak memory per stage" })).toContainText("worker RAM 64.0 MiB");
  // Tooltips are SVG titles over the bars.
  await expect(page.getByRole("img", { name: "CPU per stage" }).locator(".tips title").filter({ hasText: "heavier-minhash: 1.44 CPU-s" })).toHaveCount(1);
  await hydrated(page);
  await looksRight(page, "experiment-pipeline");
  // Dark mode follows the system; the charts' ink follows the page.
  await page.emulateMedia({ colorScheme: "dark" });
  await expect(charts.first()).toHaveCSS("color", "rgb(230, 233, 237)");
  await looksRight(page, "experiment-pipeline-dark");
  await page.emulateMedia({ colorScheme: "light" });

  await page.getByRole("link", { name: "log", exact: true }).click();
  await expect(page).toHaveURL(/scale=log/);
  await expect(page.getByRole("link", { name: "log", exact: true })).toHaveAttribute("aria-current", "true");
  await expect(charts).toHaveCount(5);

  const download = page.waitForEvent("download");
  await page.getByRole("link", { name: "Markdown report" }).click();
  const md = await readFile(await (await download).path(), "utf8");
  expect(md).toContain("Pipeline A/B");
  expect(md).toContain("stage1-Map → Scatter");
});

test("an undecided metric says what it would take, in the stage table and the forest plot, and no chart label is unreadable", async ({ page }) => {
  await signIn(page, "e2e-viewer");
  await page.getByRole("link", { name: "Dedup A/A (same code)" }).click();
  await expect(page.locator(".banner-verdict")).toContainText("inconclusive");
  const map = page.locator("table.stages tbody tr").filter({ hasText: "stage1-Map → Scatter" });
  // Two controls and one treatment trial: one degree of freedom, so nothing short of ±10000 % is
  // detectable (method 3) and the cell says only what would decide it.
  await expect(map).toContainText(/undecided: (detects ±[\d.]+ %, )?about \d+ more pairs?/);
  await expect(map).toContainText("untested: under 3 trials an arm");
  const forest = page.getByRole("img", { name: "CPU change per stage: interval against the margin" });
  await expect(forest.locator("text").filter({ hasText: /^\s*undecided: (detects ±[\d.]+ %, )?about \d+ more pairs?\s*$/ }).first()).toBeVisible();
  await expect(page.getByRole("img", { name: "Summed elapsed change per stage: interval against the margin" })).toContainText("untested: < 3 trials");
  await forest.scrollIntoViewIfNeeded();
  await looksRight(page, "experiment-undecided");
  // Every chart of the example suites' pages: no axis label or mark longer than 8 digits.
  for (const title of ["Dedup A/A (same code)", "Dedup: heavier MinHash", "Dedup: MinHash v1 (judged by an older method)", "s3 hot path: smaller write buffer"]) {
    await page.goto("/experiments");
    await page.getByRole("link", { name: title, exact: true }).click();
    await expect(page.locator("svg.chart").first()).toBeVisible();
    const labels = await page.locator("svg.chart text").allTextContents();
    expect(labels.length).toBeGreaterThan(5);
    for (const label of labels) expect(label.replace(/\D/g, "").length, `${title}: ${label.trim()}`).toBeLessThanOrEqual(8);
    if (title.startsWith("Dedup")) {
      // At 1280 px the stage table fits its column: no horizontal scroll hides the memory or the work check.
      const widths = await page.locator("main .table-wrap").evaluateAll((els) => els.map((e) => [e.scrollWidth, e.clientWidth]));
      for (const [scroll, client] of widths) expect(scroll, `${title}: the stage table fits`).toBeLessThanOrEqual(client);
      const main = await page.locator("main").evaluate((e) => [e.scrollWidth, e.clientWidth]);
      expect(main[0], `${title}: the main column does not overflow`).toBeLessThanOrEqual(main[1]);
    }
  }
});

test("an experiment judged by method 1 says so, and a launcher re-judges it, keeping both verdicts", async ({ page }) => {
  await signIn(page, "e2e-admin");
  await page.getByRole("link", { name: "Dedup: MinHash v1 (judged by an older method)" }).click();
  await expect(page.locator("dd.old-method")).toContainText("judged by method v1");
  await expect(page.getByRole("region", { name: "Verdicts" })).toHaveCount(0);
  await hydrated(page);
  await looksRight(page, "experiment-method1");
  await page.getByRole("button", { name: "Re-judge by method v3" }).click();
  await expect(page.getByText("judged by method v3")).toBeVisible();
  await expect(page.getByRole("button", { name: /Re-judge/ })).toHaveCount(0);
  const verdicts = page.getByRole("region", { name: "Verdicts" });
  await expect(verdicts.getByRole("heading")).toHaveText("Verdicts (2)");
  await expect(verdicts.locator("ol.verdicts > li").first()).toContainText("method v3");
  await expect(verdicts.locator("ol.verdicts > li").first()).toContainText("re-judged by e2e-admin");
  await expect(verdicts.locator("ol.verdicts > li").nth(1)).toContainText("method v1");
  // Method 3: two stages and the total in the CPU family, none rejected: each at Holm's stopping level, 0.8 % / 3.
  await expect(page.locator("table.stages")).toContainText("99.7 %");
  await looksRight(page, "experiment-rejudged");
});

test("a warp experiment page shows the gate with FAIL, WARN and MISSING cells, and gate.md downloads", async ({ page }) => {
  await signIn(page, "e2e-viewer", "/experiments?q=smaller%20write%20buffer");
  await page.getByRole("link", { name: "s3 hot path: smaller write buffer" }).click();
  await expect(page.getByRole("region", { name: "Verdict" })).toContainText("FAIL");
  const gate = page.locator("table.gate tbody tr");
  await expect(gate.filter({ hasText: "put-4KiB/sync-off" }).filter({ hasText: "obj/s" })).toContainText("FAIL");
  await expect(gate.filter({ hasText: "get-4MiB/sync-on" }).filter({ hasText: "obj/s" })).toContainText("WARN");
  await expect(gate.filter({ hasText: "mixed-256KiB/sync-on" }).first()).toContainText("MISSING");
  // What failed leads: the first table holds only FAIL and MISSING rows, then WARN; the passing rows
  // wait per cell in collapsed details.
  const flagged = await page.getByRole("table", { name: "Rows that failed, are missing or warned" }).locator("td.verdict-cell").allTextContents();
  const words = flagged.map((v) => v.match(/FAIL|MISSING|WARN|PASS/)?.[0] ?? v);
  expect(words.length).toBeGreaterThan(0);
  expect(words.every((w) => ["FAIL", "MISSING", "WARN"].includes(w)), words.join(",")).toBe(true);
  expect(words.indexOf("WARN") === -1 || words.slice(words.indexOf("WARN")).every((w) => w === "WARN"), words.join(",")).toBe(true);
  await expect(page.locator("details.passing")).not.toHaveAttribute("open");
  await expect(page.locator("details.passing > summary")).toHaveText(/^Rows within budget: \d+ of \d+, in \d+ cells?$/);
  // One vocabulary: baseline and candidate, as the gate and the charts say.
  await expect(page.locator("table.arms tbody")).toContainText("baseline");
  await expect(page.locator("table.arms tbody")).not.toContainText("control");
  const objs = page.getByRole("img", { name: "Objects per second (higher is better)" });
  await expect(objs).toContainText("✖ FAIL");
  await expect(objs).toContainText("▲ WARN");
  await expect(page.locator("svg.chart")).toHaveCount(3);
  await hydrated(page);
  await looksRight(page, "experiment-warp");

  const download = page.waitForEvent("download");
  await page.getByRole("link", { name: "gate.md" }).click();
  const file = await download;
  expect(file.suggestedFilename()).toMatch(/^experiment-\d+-gate\.md$/);
  const md = await readFile(await file.path(), "utf8");
  expect(md).toContain("FAIL");
  expect(md).toContain("put-4KiB/sync-off");
});

test("a share link opens the page in a fresh browser, then is refused once revoked", async ({ page, browser }) => {
  await signIn(page, "e2e-admin", "/experiments?q=fsync");
  await page.getByRole("link", { name: "s3 hot path: fsync batching" }).click();
  await expect(page.getByText("Private: signed-in users only")).toBeVisible();
  await hydrated(page);
  await page.getByRole("button", { name: "Share…" }).click();
  const field = page.getByRole("textbox", { name: "Share link" });
  await expect(field).toHaveValue(/\/share\/arb_[A-Za-z0-9_-]{43}$/);
  const link = await field.inputValue();
  await expect(page.getByText("Shared: 1 live link — anyone holding one can read this page")).toBeVisible();
  // The live links: who made each, when it expires (30 days by default), what it opens.
  await page.locator("details.share-links > summary").click();
  const links = page.getByRole("table", { name: "Live share links" });
  await expect(links.locator("tbody tr")).toHaveCount(1);
  await expect(links.locator("tbody tr td").nth(1)).toHaveText("e2e-admin");
  await expect(links.locator("tbody tr td").nth(4)).toHaveText("page and reports");
  await looksRight(page, "share-links");
  const id = page.url().match(/experiments\/(\d+)/)![1];

  const stranger = await browser.newContext();
  const visitor = await stranger.newPage();
  await visitor.goto(link);
  await expect(visitor).toHaveURL(new RegExp(`/experiments/${id}$`));
  await expect(visitor.getByRole("heading", { level: 1 })).toContainText("s3 hot path: fsync batching");
  await expect(visitor.locator('meta[property="og:title"]')).toHaveAttribute("content", /fsync batching — WARN/);
  await expect(visitor.getByRole("button", { name: "Share…" })).toHaveCount(0);
  await looksRight(visitor, "shared-view");
  // The standalone chart a PR comment embeds works with the token alone.
  const token = link.split("/share/")[1];
  const chart = await stranger.request.get(`/experiments/${id}/charts/obj-per-s.svg?share=${token}`, { maxRedirects: 0 });
  expect(chart.status()).toBe(200);
  expect(chart.headers()["content-type"]).toContain("image/svg+xml");
  await stranger.close();

  await links.getByRole("button", { name: "Revoke" }).click();
  await expect(page.getByText("Private: signed-in users only")).toBeVisible();
  const later = await browser.newContext();
  const refused = await later.request.get(link, { maxRedirects: 0 });
  expect(refused.status()).toBe(404);
  expect(await refused.text()).toContain("not valid, or it was revoked");
  const chartAfter = await later.request.get(`/experiments/${id}/charts/obj-per-s.svg?share=${token}`, { maxRedirects: 0 });
  expect(chartAfter.status()).not.toBe(200);
  await later.close();
});

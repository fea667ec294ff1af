import { test, expect, signIn, hydrated } from "./fixtures";
import { readFile } from "node:fs/promises";

test("a pipeline experiment page shows the verdict, the stage table and its charts", async ({ page }) => {
  await signIn(page, "e2e-viewer");
  await page.getByRole("link", { name: "Dedup: heavier MinHash" }).click();
  await expect(page.getByRole("heading", { level: 1 })).toContainText("Dedup: heavier MinHash");
  const banner = page.getByRole("region", { name: "Verdict" });
  await expect(banner).toContainText("regression");
  await expect(banner).toContainText("stage1-Map → Scatter: more CPU: CPU higher +27.4 %");
  const stages = page.locator("table.stages");
  await expect(stages.locator("tbody tr")).toHaveCount(3);
  await expect(stages.locator("tbody tr").first()).toContainText("+27.4 %");
  const charts = page.locator("svg.chart");
  await expect(charts).toHaveCount(3);
  await expect(page.getByRole("img", { name: "CPU per stage" })).toBeVisible();
  await expect(page.getByRole("img", { name: "Peak memory per stage" })).toContainText("worker RAM 64.0 MiB");
  // Tooltips are SVG titles over the bars.
  await expect(charts.first().locator(".tips title").filter({ hasText: "heavier-minhash: 1.44 CPU-s" })).toHaveCount(1);
  await hydrated(page);
  await page.screenshot({ path: "test-results/experiment-pipeline.png", fullPage: true });
  // Dark mode follows the system; the charts' ink follows the page.
  await page.emulateMedia({ colorScheme: "dark" });
  await expect(charts.first()).toHaveCSS("color", "rgb(230, 233, 237)");
  await page.screenshot({ path: "test-results/experiment-pipeline-dark.png", fullPage: true });
  await page.emulateMedia({ colorScheme: "light" });

  await page.getByRole("link", { name: "log", exact: true }).click();
  await expect(page).toHaveURL(/scale=log/);
  await expect(page.getByRole("link", { name: "log", exact: true })).toHaveAttribute("aria-current", "true");
  await expect(charts).toHaveCount(3);

  const download = page.waitForEvent("download");
  await page.getByRole("link", { name: "Markdown report" }).click();
  const md = await readFile(await (await download).path(), "utf8");
  expect(md).toContain("Pipeline A/B");
  expect(md).toContain("stage1-Map → Scatter");
});

test("a warp experiment page shows the gate with FAIL, WARN and MISSING cells, and gate.md downloads", async ({ page }) => {
  await signIn(page, "e2e-viewer", "/experiments?q=smaller%20write%20buffer");
  await page.getByRole("link", { name: "s3 hot path: smaller write buffer" }).click();
  await expect(page.getByRole("region", { name: "Verdict" })).toContainText("FAIL");
  const gate = page.locator("table.gate tbody tr");
  await expect(gate.filter({ hasText: "put-4KiB/sync-off" }).filter({ hasText: "reqps" })).toContainText("FAIL");
  await expect(gate.filter({ hasText: "get-4MiB/sync-on" }).filter({ hasText: "reqps" })).toContainText("WARN");
  await expect(gate.filter({ hasText: "mixed-256KiB/sync-on" }).first()).toContainText("MISSING");
  const objs = page.getByRole("img", { name: "Objects per second (higher is better)" });
  await expect(objs).toContainText("✖ FAIL");
  await expect(objs).toContainText("▲ WARN");
  await expect(page.locator("svg.chart")).toHaveCount(3);
  await hydrated(page);
  await page.screenshot({ path: "test-results/experiment-warp.png", fullPage: true });

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
  await expect(page.getByText("Shared: anyone with a link can read this page")).toBeVisible();
  const id = page.url().match(/experiments\/(\d+)/)![1];

  const stranger = await browser.newContext();
  const visitor = await stranger.newPage();
  await visitor.goto(link);
  await expect(visitor).toHaveURL(new RegExp(`/experiments/${id}$`));
  await expect(visitor.getByRole("heading", { level: 1 })).toContainText("s3 hot path: fsync batching");
  await expect(visitor.locator('meta[property="og:title"]')).toHaveAttribute("content", /fsync batching — WARN/);
  await expect(visitor.getByRole("button", { name: "Share…" })).toHaveCount(0);
  await visitor.screenshot({ path: "test-results/shared-view.png", fullPage: true });
  // The standalone chart a PR comment embeds works with the token alone.
  const token = link.split("/share/")[1];
  const chart = await stranger.request.get(`/experiments/${id}/charts/obj-per-s.svg?share=${token}`, { maxRedirects: 0 });
  expect(chart.status()).toBe(200);
  expect(chart.headers()["content-type"]).toContain("image/svg+xml");
  await stranger.close();

  await page.getByRole("button", { name: "Revoke links" }).click();
  await expect(page.getByText("Private: signed-in users only")).toBeVisible();
  const later = await browser.newContext();
  const refused = await later.request.get(link, { maxRedirects: 0 });
  expect(refused.status()).toBe(404);
  expect(await refused.text()).toContain("not valid, or it was revoked");
  const chartAfter = await later.request.get(`/experiments/${id}/charts/obj-per-s.svg?share=${token}`, { maxRedirects: 0 });
  expect(chartAfter.status()).not.toBe(200);
  await later.close();
});

import { test, expect, signIn, hydrated, looksRight } from "./fixtures";

// The demo data files 52 judged warp experiments under the example warp suite (scripts/demo-data.sh);
// their control level steps halfway, so the series has a change point.
test("the trends page draws a suite's series from its experiments, and a point opens its experiment", async ({ page }) => {
  await signIn(page, "e2e-viewer", "/trends?suite=s3s-fs-warp&metric=reqps");
  await expect(page.getByLabel("Suite")).toHaveValue("s3s-fs-warp");
  await expect(page.getByLabel("Metric")).toHaveValue("reqps");
  await expect(page.getByLabel("Stage or cell")).toHaveValue("put-4KiB/sync-on");
  const chart = page.locator("figure.trend svg");
  await expect(chart).toHaveAttribute("aria-label", /Objects per second of put-4KiB\/sync-on/);
  const links = chart.locator("a");
  expect(await links.count()).toBeGreaterThanOrEqual(52);
  await expect(page.locator("figure.trend figcaption")).toContainText("1 series");
  await expect(page.getByRole("region", { name: "Change points" })).toBeVisible();
  // The time axis labels each tick once (the demo's points are a night apart: dates at round steps).
  const times = (await chart.locator("text").allTextContents()).map((t) => t.trim()).filter((t) => /^\d\d[:-]\d\d|^\d{4}-\d\d-\d\d$/.test(t));
  expect(times.length).toBeGreaterThanOrEqual(2);
  expect(new Set(times).size, `no repeated time label: ${times}`).toBe(times.length);
  await looksRight(page, "trends");
  // Another metric keeps the suite and cell in the URL.
  await page.getByLabel("Metric").selectOption("p99-latency");
  await page.getByRole("button", { name: "Show" }).click();
  await expect(page).toHaveURL(/suite=s3s-fs-warp&metric=p99-latency&item=put-4KiB%2Fsync-on/);
  await expect(chart).toHaveAttribute("aria-label", /p99 latency/);
  // The newest point is drawn last (on top).
  const newest = chart.locator("a").last();
  const href = await newest.getAttribute("href");
  await newest.click();
  await expect(page).toHaveURL(new RegExp(`${href}$`));
  await expect(page.getByRole("region", { name: "Verdict" })).toBeVisible();
});

test("the trends page opens on a suite that has something to chart", async ({ page }) => {
  await signIn(page, "e2e-viewer", "/trends");
  await expect(page.locator("figure.trend svg")).toBeVisible();
  await expect(page.getByText("Nothing to chart yet")).toHaveCount(0);
  await looksRight(page, "trends-default");
});

test("a launcher marks a change point as expected, with a reason kept beside it", async ({ page }) => {
  await signIn(page, "e2e-admin", "/trends?suite=s3s-fs-warp&metric=reqps");
  const changes = page.getByRole("region", { name: "Change points" });
  const row = changes.locator("tbody tr").first();
  await expect(row).toContainText("not marked");
  await expect(row.locator("td").nth(3)).toHaveText(/^[+-]\d+\.\d %$/);
  await hydrated(page);
  await row.getByLabel("What this change is").selectOption("acknowledged");
  await row.getByLabel("Reason").fill("the gate inputs moved to the 4 MiB baseline");
  // Marking reloads the page itself (a reload of the test's own would race it): the mark is stored.
  await Promise.all([page.waitForEvent("load"), row.getByRole("button", { name: "Mark" }).click()]);
  await expect(row).toContainText("expected: the gate inputs moved to the 4 MiB baseline (e2e-admin,");
  // It is on the chart too.
  await expect(page.locator("figure.trend svg")).toContainText("expected");
  await expect(changes.locator("tbody tr").first()).toContainText("expected: the gate inputs moved");
  await looksRight(page, "trends-marked");
});

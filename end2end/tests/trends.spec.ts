import { test, expect, signIn } from "./fixtures";

// The demo data files 52 judged warp experiments under the example warp suite (scripts/demo-data.sh).
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
  await page.screenshot({ path: "test-results/trends.png", fullPage: true });
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

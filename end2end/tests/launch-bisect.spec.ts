import { test, expect, signIn, hydrated, looksRight } from "./fixtures";
// Named launch-bisect so that it runs after the history tests, whose counts of the demo experiments it would change.

// A bisection started from a regression's page, for real: the example Zephyr suite's cpu-heavier branch
// (one commit: 96 MinHash permutations instead of 24) against main, judged a regression; "Find the commit"
// with the moved stage preselected reuses that experiment as the first step, runs the confirmation, and
// the bisection's page fills in as it goes.
test("find the commit from a regression's page: the bisection page fills in and names the culprit", async ({ page }) => {
  test.setTimeout(600_000);
  await signIn(page, "e2e-admin", "/launch?suite=zephyr-pipeline");
  await hydrated(page);
  await page.getByLabel("Treatment ref").fill("cpu-heavier");
  // Six pairs: uncalibrated, a test needs 4 df of the run's own (method 3), and in balanced order the
  // order covariate takes one more (with 4 pairs, 2 df left ×2.5 undecided at this sample's noise).
  await page.getByLabel("Trials per arm").fill("6");
  await page.getByRole("button", { name: "Launch", exact: true }).click();
  await expect(page).toHaveURL(/\/experiments\/\d+$/);
  await expect(page.locator(".banner-verdict .muted")).toHaveText("judged", { timeout: 300_000 });
  await expect(page.locator(".banner-verdict .verdict")).toContainText("regression");
  await page.reload();
  await hydrated(page);

  // The moved stage is preselected; the dry run says what the bisection will run.
  await page.getByRole("button", { name: "Find the commit" }).click();
  const metric = page.locator(".find-commit select[name=metric]");
  await expect(metric).toHaveValue("cpu:stage3-Map → Write");
  await page.getByRole("button", { name: "Dry run" }).click();
  await expect(page.locator(".bisect-plan")).toContainText("1 commit after");
  await expect(page.locator(".bisect-plan")).toContainText("the ends already compared (reused) + 1 confirmation = 1 experiment,");
  await looksRight(page, "find-the-commit");
  await page.getByRole("button", { name: "Start bisection" }).click();
  await expect(page).toHaveURL(/\/bisections\/\d+$/);

  // At once: the ends (the regression it started from) and the confirmation, running.
  const steps = page.locator("table.bisection-steps tbody tr");
  await expect(steps).toHaveCount(2);
  await expect(steps.first()).toContainText("the ends");
  await expect(steps.first()).toContainText("moved");
  await expect(steps.nth(1)).toContainText("confirmation");
  await expect(page.locator(".bisection-status")).toContainText("searching");
  await looksRight(page, "bisection-running");
  // The page reads itself again while it runs: the confirmation ends and the culprit is named.
  await expect(page.locator(".bisection-status")).toContainText("culprit found", { timeout: 400_000 });
  await expect(steps.nth(1)).toContainText("moved");
  const culprit = page.getByRole("region", { name: "Culprit" });
  await expect(culprit).toContainText("minhash: 96 permutations for finer similarity estimates");
  await expect(culprit).toContainText("Arbiter example");
  await expect(culprit).toContainText("1 file changed");
  await expect(page.locator("svg.chart")).toHaveCount(1);
  await expect(page.locator("svg.chart")).toContainText("culprit");
  await page.locator("details.pr-markdown summary").click();
  await expect(page.getByLabel("PR comment Markdown")).toHaveValue(/### Arbiter bisection — 🎯 culprit found/);
  await looksRight(page, "bisection-done");
  // Each step links its experiment.
  await steps.nth(1).getByRole("link").click();
  await expect(page).toHaveURL(/\/experiments\/\d+$/);
  await expect(page.locator("h1")).toContainText("bisect confirm");
});

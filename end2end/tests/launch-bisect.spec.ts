import { test, expect, signIn, hydrated, looksRight } from "./fixtures";
// Named launch-bisect so that it runs after the history tests, whose counts of the demo experiments it would change.

// The first hour after the setup (setup.spec.ts): a launch of the example, its verdict, the PR comment and
// its share link opened signed out (the numbers agree everywhere), then a bisection started from the
// regression's page, for real: the example Zephyr suite's cpu-heavier branch
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

  // One number: the headline's change is the stage table's, and the PR comment's.
  const row = page.locator("table.stages tbody tr").filter({ hasText: "stage3-Map → Write" });
  const change = (await row.locator("td.num strong").first().textContent())!.trim();
  expect(change).toMatch(/^\+\d+\.\d %$/);
  await expect(page.locator(".banner-verdict .headline")).toHaveText(`— ${change} CPU in stage3-Map → Write`);
  await looksRight(page, "first-hour-verdict");
  await page.context().grantPermissions(["clipboard-read", "clipboard-write"]);
  await page.getByRole("button", { name: "Copy PR comment" }).click();
  const comment = page.getByLabel("PR comment", { exact: true });
  await expect(comment).toHaveValue(new RegExp(`\\*\\*In short:\\*\\* regression — \\${change.replace(".", "\\.")} CPU in stage3`));
  const text = await comment.inputValue();
  expect(text).toContain(`| stage3-Map → Write | ${change} [`);
  expect(text).toContain("![CPU change per stage: interval against the margin](");
  const share = text.match(/\]\((http:\/\/[^)\s]+\/share\/arb_[^)\s]+)\)/)![1];
  // The comment link is one of the page's live links at once.
  await expect(page.locator(".share-state")).toHaveText(/Shared: 1 live link/);
  await looksRight(page, "first-hour-comment");
  // The comment's link, signed out: the same page and the same number.
  const outsider = await page.context().browser()!.newContext();
  const visitor = await outsider.newPage();
  await visitor.goto(share);
  await expect(visitor).toHaveURL(/\/experiments\/\d+$/);
  await expect(visitor.locator("table.stages tbody tr").filter({ hasText: "stage3-Map → Write" }).locator("td.num strong").first()).toHaveText(change);
  await expect(visitor.getByRole("button", { name: "Copy PR comment" })).toHaveCount(0);
  await looksRight(visitor, "first-hour-shared");
  await outsider.close();
  const experiment = page.url();

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
  const bisection = page.url();
  // Its share link: the PR comment links it, and it opens the bisection signed out.
  await expect(page.locator(".share-state")).toHaveText(/Private: signed-in users only/);
  await page.getByRole("button", { name: "Share…" }).click();
  const field = page.getByLabel("Share link");
  await expect(field).toHaveValue(/\/share\/arb_[A-Za-z0-9_-]{43}$/);
  const bisectionShare = await field.inputValue();
  await expect(page.getByLabel("PR comment Markdown")).toHaveValue(new RegExp(bisectionShare.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")));
  await expect(page.locator(".share-state")).toHaveText(/Shared: 1 live link/);
  await looksRight(page, "bisection-shared");
  const reviewer = await page.context().browser()!.newContext();
  const reader = await reviewer.newPage();
  await reader.goto(bisectionShare);
  await expect(reader).toHaveURL(/\/bisections\/\d+$/);
  await expect(reader.locator(".bisection-status")).toContainText("culprit found");
  await expect(reader.getByRole("button", { name: "Share…" })).toHaveCount(0);
  await reader.locator("table.bisection-steps tbody tr").nth(1).getByRole("link").click();
  await expect(reader.locator("h1")).toContainText("bisect confirm");
  await looksRight(reader, "bisection-shared-reader");
  await reviewer.close();
  // Each step links its experiment.
  await steps.nth(1).getByRole("link").click();
  await expect(page).toHaveURL(/\/experiments\/\d+$/);
  await expect(page.locator("h1")).toContainText("bisect confirm");

  // Found again: the experiment links its bisection, and the list has it, with its outcome.
  const id = bisection.match(/\/bisections\/(\d+)$/)![1];
  await page.goto(experiment);
  await expect(page.locator(".bisections-of")).toContainText(`#${id}`);
  await page.getByRole("link", { name: "Bisections", exact: true }).click();
  const listed = page.locator("table.bisections tbody tr").filter({ has: page.locator(`a[href="/bisections/${id}"]`) });
  await expect(listed).toContainText("culprit");
  await expect(listed).toContainText("zephyr-pipeline");
  await looksRight(page, "first-hour-bisections");
});

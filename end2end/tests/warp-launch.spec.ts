import { test, expect, signIn, hydrated, expectRefusal, looksRight } from "./fixtures";

// Runs last (files run in name order): the real warp experiment it launches would join the demo's trend
// series that trends.spec.ts reads.
// The example warp suite (suites/s3s-fs-warp.toml) for real: s3s-fs built from the example repository,
// Arbiter's own load driver. Its full matrix is estimated at about 19 minutes; the form shortens it.
test("a warp launch from the form runs a shortened matrix: two workloads, drive sync on, one 1-second round", async ({ page, problems }) => {
  test.setTimeout(300_000);
  await signIn(page, "e2e-admin", "/launch?suite=s3s-fs-warp");
  await hydrated(page);
  // A warp launch offers the orders it runs (AB, ABBA), and no empty fingerprint.
  await expect(page.locator("select[name=order] option")).toHaveText(["AB: baseline, then candidate", "ABBA: A1 B1 B2 A2 (shows drift)"]);
  await expect(page.locator("fieldset", { hasText: "Workload fingerprint" })).toHaveCount(0);
  await page.getByLabel("Treatment ref").fill("cpu-starved");
  const workloads = page.getByRole("group", { name: "Workloads" });
  for (const w of ["put-4MiB", "get-4MiB", "get-10MiB", "mixed-256KiB"]) await workloads.getByLabel(w).uncheck();
  await page.getByRole("group", { name: "Drive sync" }).getByLabel("off").uncheck();
  await page.getByLabel("Rounds").fill("1");
  await page.getByLabel("Duration of a round").fill("1s");
  await page.getByLabel("Warm-up").fill("0s");
  await page.getByLabel("Cool-down").fill("0s");
  await page.getByRole("button", { name: "Preview" }).click();
  const plan = page.getByRole("region", { name: "Plan" });
  await expect(plan.locator(".matrix")).toHaveText(
    "Matrix: 2 workloads (put-4KiB, get-4KiB) × drive sync on; 1 round of 1s each (warm-up 0s, cool-down 0s), concurrency 8",
  );
  await expect(plan.locator(".trial-count")).toHaveText("2 trials");
  // Adaptive rounds: on, once the suite is calibrated, up to 18 rounds an arm (17 more pairs of 1 round).
  await expect(plan.locator(".adaptive-rounds")).toContainText(
    "Adaptive rounds: on once this suite is calibrated for these settings on this host (an A/A run): a cell whose noise-aware reading more phases could change gets another pair of phases (1 round each), up to 18 rounds an arm (17 more pairs)",
  );
  await expect(plan).toContainText("(1 per arm, AB phase order, 4 load runs); time: under a minute (from the matrix settings");
  await expect(plan).not.toContainText("Fingerprint:");
  await expect(page.getByRole("button", { name: "Calibrate" })).toHaveCount(0);
  await looksRight(page, "launch-warp-preview");
  // Outside the suite's limits: the server's words, and nothing launched.
  await page.getByLabel("Rounds").fill("50");
  await page.getByRole("button", { name: "Preview" }).click();
  await expect(page.getByRole("alert").filter({ hasText: "warp.rounds: 50: must be between 1 and 10 (the suite's [warp.limits])" })).toBeVisible();
  expectRefusal(problems, 400, "/api/v1/experiments");
  await page.getByLabel("Rounds").fill("1");

  await page.getByRole("button", { name: "Launch", exact: true }).click();
  await expect(page).toHaveURL(/\/experiments\/\d+$/);
  await expect(page.getByRole("region", { name: "Progress" })).toHaveCount(0, { timeout: 240_000 });
  await expect(page.locator(".banner-verdict .muted")).toHaveText("judged");
  await expect(page.locator("dd.matrix")).toHaveText(
    "2 workloads (put-4KiB, get-4KiB) × drive sync on; 1 round of 1s each (warm-up 0s, cool-down 0s), concurrency 8 (set at launch)",
  );
  // The gate has the cells asked for, and only those.
  const cells = await page.locator("table.gate tbody tr th").allTextContents();
  expect([...new Set(cells.map((c) => c.trim()))].sort()).toEqual(["get-4KiB/sync-on", "put-4KiB/sync-on"]);
  // Flagged rows lead; both cells carry the suite's note, shown when the cell is flagged.
  const flagged = page.getByRole("table", { name: "Rows that failed, are missing or warned" });
  if ((await flagged.count()) > 0) await expect(page.locator(".cell-notes p.note").first()).toContainText("known behaviour (from the suite)");
  // The rounds behind each median, per phase (A1 the baseline, B1 the candidate).
  const rounds = page.getByRole("table", { name: "Rounds per cell" });
  await page.locator("details.rounds > summary").click();
  await expect(rounds.locator("tbody tr")).toHaveCount(2);
  await expect(rounds.locator("tbody tr td").first()).toHaveText(/^A1: \d/);
  await expect(rounds.locator("tbody tr td").nth(1)).toHaveText(/^B1: \d/);
  // One provenance line per phase binary, the arms named as the page names them.
  const provenance = page.getByRole("region", { name: "Gate" }).locator("dl.facts");
  await expect(provenance).toContainText("A1 (baseline, sync-on): ");
  await expect(provenance).toContainText("B1 (candidate, sync-on): ");
  await looksRight(page, "experiment-warp-launched");
});

import { test, expect, signIn, hydrated, expectRefusal, looksRight } from "./fixtures";

// The example pipeline suite (suites/zephyr-pipeline.toml) runs for real: a Zephyr pipeline in a git
// worktree per arm, stage rows to Arbiter's finelog server.
test("launch from the form: preview the plan, launch, watch progress without a reload, see the verdict", async ({ page }) => {
  test.setTimeout(300_000);
  await signIn(page, "e2e-admin", "/launch?suite=zephyr-pipeline");
  await hydrated(page);
  await expect(page.getByLabel("Suite")).toHaveValue("zephyr-pipeline");
  await expect(page.getByLabel("workers")).toHaveValue("2"); // the suite's default
  await page.getByLabel("Treatment ref").fill("cheaper");
  await page.getByLabel("Trials per arm").fill("1");
  await page.getByRole("button", { name: "Preview" }).click();
  const plan = page.getByRole("region", { name: "Plan" });
  // A pair, after one unmeasured warm-up trial (the suite runs on this host).
  await expect(plan.locator(".trial-count")).toHaveText("3 trials");
  await expect(plan).toContainText("after 1 unmeasured warm-up trial");
  await expect(plan.locator("ol.commands li")).toHaveCount(3);
  await expect(plan.locator("ol.commands")).toContainText("datakit.py");
  await expect(plan.locator("code.sha")).toHaveCount(2);
  await expect(plan.locator("code.sha").first()).toHaveText(/^[0-9a-f]{10}$/);
  await looksRight(page, "launch-preview");

  await page.getByRole("button", { name: "Launch", exact: true }).click();
  await expect(page).toHaveURL(/\/experiments\/\d+$/);
  const live = page.getByRole("region", { name: "Progress" });
  await expect(live.locator(".live-count")).toHaveText(/^\d\/3 trials ended$/, { timeout: 20_000 });
  // The same document keeps receiving updates: a mark set now survives them.
  await page.evaluate(() => ((window as unknown as { mark: number }).mark = 1));
  await expect.poll(async () => Number(await live.getAttribute("data-updates")), { timeout: 60_000 }).toBeGreaterThan(3);
  expect(await page.evaluate(() => (window as unknown as { mark?: number }).mark)).toBe(1);
  // The trials table follows the run too (trials run one after the other here): the warm-up ends while
  // the pair's first runs, and the page was not reloaded to show it. Columns: #, Arm, In pair, Started,
  // Duration, Timeline, State.
  const rows = page.locator("table.trials tbody tr");
  await expect(rows.first().locator("td").nth(2)).toHaveText("warm-up (not judged)");
  await expect(rows.first().locator("td").nth(6)).toHaveText("succeeded", { timeout: 120_000 });
  await expect(rows.nth(1).locator("td").nth(6)).toHaveText(/running|succeeded/);
  expect(await page.evaluate(() => (window as unknown as { mark?: number }).mark), "no reload").toBe(1);
  await looksRight(page, "launch-progress");
  // When the verdict is stored the page shows it (and the progress section is gone).
  await expect(page.getByRole("region", { name: "Progress" })).toHaveCount(0, { timeout: 240_000 });
  await expect(page.locator(".banner-verdict .muted")).toHaveText("judged");
  await expect(page.locator(".banner-verdict .verdict")).not.toContainText("not judged");
  await expect(rows).toHaveCount(3);
  // The pair ran in the order the page says: one trial first, the other second.
  expect((await rows.nth(1).locator("td").nth(2).textContent())!.trim()).toBe("1 · 1st");
  expect((await rows.nth(2).locator("td").nth(2).textContent())!.trim()).toBe("1 · 2nd");
  await expect(page.locator(".reasons").first()).toContainText("warm-up: 1 trial ran first and is not judged");
  // The measurement report says what the warm-up cost (one pair: too few trials for drift or outliers).
  await expect(page.getByRole("region", { name: "Measurement" })).toContainText(/Warm-up: trial #1 \((control|treatment)\) used [+−±][\d.]+ % CPU/);
  // The example asks 2 CPUs: a 2-CPU host has none to reserve, and says so; a larger one reserves them.
  await expect(page.getByRole("region", { name: "Measurement" })).toContainText(
    /Isolation: (every measured trial ran on CPUs? [\d,-]+ reserved for it|none — no CPU set reserved: the trial needs 2 CPUs and this host has \d)/,
  );
  await looksRight(page, "experiment-launched");

  // Its files: every trial's log, readable in the browser.
  const files = page.locator("details.files");
  await files.locator("summary").click();
  const logs = files.getByRole("link", { name: /\.log$/ });
  expect(await logs.count()).toBeGreaterThanOrEqual(2);
  const href = await logs.first().getAttribute("href");
  const log = await page.request.get(href!);
  expect(log.status()).toBe(200);
  expect(log.headers()["content-type"]).toMatch(/^text\/plain/);
  expect((await log.text()).length).toBeGreaterThan(0);
  await logs.first().click();
  await expect(page).toHaveURL(new RegExp(`${href}$`));
  await expect(page.locator("body")).not.toBeEmpty();
});

// Adaptive trials: the engine adds a pair at a time while the verdict is undecided, and the page draws
// each CPU metric's interval narrowing look by look, live. Same code against itself on the tiny sample
// stays undecided for many pairs. Uncalibrated and in balanced order, the first finite look is the sixth
// pair (the order covariate takes a df, and an uncalibrated test needs 4 of the run's own), so a budget of
// 8 leaves room for a later look.
test("an auto launch adds pairs while the verdict is undecided and its interval chart updates without a reload", async ({ page }) => {
  test.setTimeout(360_000);
  await signIn(page, "e2e-admin", "/launch?suite=zephyr-pipeline");
  await hydrated(page);
  await page.getByLabel("Treatment ref").fill("main");
  await page.getByLabel("Trials per arm").fill("auto");
  await page.getByLabel("Budget: at most this many trials an arm").fill("8");
  await page.getByRole("button", { name: "Preview" }).click();
  const plan = page.getByRole("region", { name: "Plan" });
  await expect(plan.locator(".trial-count")).toHaveText("5 trials");
  await expect(plan.locator(".adaptive-plan")).toContainText(
    "the first look after 2 trials an arm; a pair at a time while the verdict is undecided, at most 8 trials an arm",
  );
  await looksRight(page, "launch-auto-preview");

  await page.getByRole("button", { name: "Launch", exact: true }).click();
  await expect(page).toHaveURL(/\/experiments\/\d+$/);
  const pairs = page.getByRole("region", { name: "Pairs" });
  await expect(pairs.locator(".pairs-line")).toContainText(/pairs done/);
  await page.evaluate(() => ((window as unknown as { mark: number }).mark = 1));
  // The first look whose interval is finite brings the chart (uncalibrated, about four pairs: no spread is
  // borrowed); a later look redraws it, in the same document.
  const look = async () => Number(await pairs.getAttribute("data-look"));
  await expect.poll(look, { timeout: 180_000 }).toBeGreaterThanOrEqual(2);
  const chart = pairs.locator("svg[aria-label^='CPU change pair by pair']");
  await expect(chart).toBeVisible({ timeout: 240_000 });
  const first = await look();
  await expect(chart).toContainText(`after ${first} pairs`);
  await looksRight(page, "auto-first-look");
  // A later look redraws it — unless the design stopped at this one: a same-code run can be decided at its
  // first finite look (each side of the sequence read one-sided at 1 %, method 3).
  const progress = page.getByRole("region", { name: "Progress" });
  // (Once judged the live sections are gone: read the look only while they are there.)
  const ended = async () => (await progress.count()) === 0 || (await pairs.count()) === 0;
  await expect.poll(async () => (await ended()) || (await look()) > first, { timeout: 180_000 }).toBe(true);
  // The mark first: a page that reloads does so when the verdict is stored, and the live sections go with it.
  const mark = await page.evaluate(() => (window as unknown as { mark?: number }).mark);
  const later = (await ended()) ? first : await look();
  if (later > first) {
    expect(mark, "the chart was redrawn without a reload").toBe(1);
    await expect(chart).toContainText(`after ${later} pairs`);
    await expect(pairs.locator(".pairs-line")).toContainText(new RegExp(`^\\s*\\d+ of at most 8 pairs done|^\\s*\\d+/\\d+ pairs done`));
    await looksRight(page, "auto-later-look");
  }
  // Judged: the page keeps the course among its charts, and says how many pairs it used and why it stopped.
  await expect(page.getByRole("region", { name: "Progress" })).toHaveCount(0, { timeout: 240_000 });
  await expect(page.locator(".banner-verdict .muted")).toHaveText("judged");
  await expect(page.locator("svg[aria-label^='CPU change pair by pair']")).toBeVisible();
  await expect(page.getByRole("listitem").filter({ hasText: /^\s*pairs\s*\d of \d used \((not )?stopped\): / })).toBeVisible();
  await looksRight(page, "auto-judged");
});

test("a launcher cancels a running experiment, then re-runs it as a new one", async ({ page }) => {
  test.setTimeout(120_000);
  await signIn(page, "e2e-admin", "/launch?suite=zephyr-pipeline");
  await hydrated(page);
  await page.getByLabel("Treatment ref").fill("cheaper");
  await page.getByLabel("Trials per arm").fill("3");
  await page.getByLabel("Title (optional)").fill("cancel me");
  await page.getByRole("button", { name: "Launch", exact: true }).click();
  await expect(page).toHaveURL(/\/experiments\/\d+$/);
  const first = page.url();
  const shas = await page.locator("table.arms tbody tr td:nth-child(4)").allTextContents();
  await hydrated(page);
  await page.getByRole("button", { name: "Cancel experiment" }).click();
  await expect(page.locator(".banner-verdict .muted")).toHaveText("cancelled", { timeout: 30_000 });
  // A trial that was running takes a moment to stop; the page keeps its live table until it has.
  await expect(page.getByRole("region", { name: "Progress" })).toHaveCount(0, { timeout: 30_000 });
  await expect(page.getByRole("button", { name: "Cancel experiment" })).toHaveCount(0);
  // Nothing that was queued ran: every trial is cancelled or ended.
  for (const state of await page.locator("table.trials tbody tr td:nth-child(7)").allTextContents()) {
    expect(["cancelled", "succeeded", "failed"]).toContain(state.trim());
  }
  await expect(page.getByText("No report: it was cancelled before every trial had ended")).toBeVisible();
  await looksRight(page, "experiment-cancelled");

  await hydrated(page);
  await page.getByRole("button", { name: "Re-run" }).click();
  await expect(page).not.toHaveURL(first);
  await expect(page).toHaveURL(/\/experiments\/\d+$/);
  await expect(page.getByRole("heading", { level: 1 })).toContainText("cancel me");
  // It runs the same commits again, pinned by SHA.
  expect(await page.locator("table.arms tbody tr td:nth-child(4)").allTextContents()).toEqual(shas);
  // The re-run is a new experiment of its own; cancel it too, so it does not hold the runner.
  await hydrated(page);
  await page.getByRole("button", { name: "Cancel experiment" }).click();
  await expect(page.locator(".banner-verdict .muted")).toHaveText("cancelled", { timeout: 30_000 });
});


test("the launch preview says what the planned trials can detect, and one click takes the trials a chosen change needs", async ({ page }) => {
  await signIn(page, "e2e-admin", "/launch?suite=zephyr-pipeline");
  await hydrated(page);
  await page.getByLabel("Treatment ref").fill("cheaper");
  // Two trials an arm, uncalibrated, measure one degree of freedom: nothing below ±10000 % (method 3).
  await page.getByLabel("Trials per arm").fill("2");
  await page.getByRole("button", { name: "Preview" }).click();
  const power = page.getByRole("region", { name: "Plan" }).locator(".power");
  await expect(power.locator(".detectable")).toContainText("2 trials an arm detect nothing below ±10000 %: they measure too little spread of their own (calibrate the suite");
  await page.getByLabel("Trials per arm").fill("4");
  await page.getByLabel("Size the trials for a CPU change of (%)").fill("30");
  await page.getByRole("button", { name: "Preview" }).click();
  await expect(power.locator(".detectable")).toContainText(/Can detect ±[\d.]+ % with 4 trials an arm\./);
  await expect(power).toContainText("the default spread (uncalibrated)");
  // The third answer's X is fixed by the plan: four pairs at the default spread resolve too little for it.
  await expect(power.locator(".no-regression")).toContainText(/No "no regression of X %" answer — 4 pairs resolve only [\d.]+ % at a 5\.0 % spread/);
  const need = power.locator(".needed");
  await expect(need).toContainText(/±30 % needs about \d+ trials an arm\./);
  const n = Number((await need.textContent())!.match(/needs about (\d+) trials/)![1]);
  expect(n).toBeGreaterThan(4);
  await looksRight(page, "launch-power");
  await need.getByRole("button", { name: `Use ${n} trials` }).click();
  await expect(page.getByLabel("Trials per arm")).toHaveValue(String(n));
  // Both arms' trials, after one warm-up.
  await expect(page.getByRole("region", { name: "Plan" }).locator(".trial-count")).toHaveText(`${2 * n + 1} trials`);
  await expect(power.locator(".needed")).toContainText(`±30 % needs ${n} trials an arm: this plan has them.`);
  // Twenty pairs resolve enough: if nothing is detected the experiment may pass on "no regression ≥ X".
  await page.getByLabel("Trials per arm").fill("20");
  await page.getByRole("button", { name: "Preview" }).click();
  await expect(power.locator(".no-regression")).toContainText(/can still pass on "no regression ≥ 8\.2 %" \(99 % one-sided bound\): 2 × the 4\.1 % that 20 pairs resolve/);
  await looksRight(page, "launch-no-regression");
});

test("the form opens on the suite of the user's last launch, not the alphabetically first", async ({ page }) => {
  // The demo's newest experiment by e2e-admin is filed under zephyr-pipeline; s3s-fs-warp sorts first.
  await signIn(page, "e2e-admin", "/launch");
  await expect(page.getByLabel("Suite")).toHaveValue("zephyr-pipeline");
  await page.goto("/launch?suite=s3s-fs-warp");
  await expect(page.getByLabel("Suite")).toHaveValue("s3s-fs-warp");
});

test("an invalid value is named inline in the server's words, and nothing is launched", async ({ page, problems }) => {
  await signIn(page, "e2e-admin", "/launch?suite=zephyr-pipeline");
  await hydrated(page);
  const count = async () => (await (await page.request.get("/api/v1/experiments?suite=zephyr-pipeline&limit=500")).json()).experiments.length;
  const before = await count();
  await page.getByLabel("Treatment ref").fill("cheaper");
  await page.getByLabel("workers").fill("9");
  const message = "fingerprint.workers: 9: must be between 1 and 4";
  await expect(page.getByRole("alert").filter({ hasText: message })).toBeVisible();
  // Preview submits the form: the browser's own validation bubble does not take over (the form is
  // `novalidate`), so the inline message stays and the form says what to fix.
  await page.getByRole("button", { name: "Preview" }).click();
  await expect(page.getByRole("alert").filter({ hasText: "fix the marked fields first" })).toBeVisible();
  expect(await page.locator("form.launch").evaluate((f) => (f as HTMLFormElement).noValidate)).toBe(true);
  await looksRight(page, "launch-invalid");
  // The server refuses the same value with the same words.
  const origin = new URL(page.url()).origin;
  const api = await page.request.post("/api/v1/experiments", {
    headers: { origin },
    data: { suite: "zephyr-pipeline", head: "cheaper", fingerprint: { workers: 9 }, dry_run: true },
  });
  expect(api.status()).toBe(400);
  expect((await api.json()).error).toBe(message);
  await page.getByRole("button", { name: "Launch", exact: true }).click();
  await expect(page.getByRole("alert").filter({ hasText: "fix the marked fields first" })).toBeVisible();

  // What only the server can know (the repository has no such branch) comes back inline as well.
  await page.getByLabel("workers").fill("2");
  await page.getByLabel("Treatment ref").fill("no-such-branch");
  const refused = page.waitForResponse((r) => r.url().endsWith("/api/v1/experiments"));
  await page.getByRole("button", { name: "Launch", exact: true }).click();
  expect((await refused).status()).toBe(400);
  await expect(page.getByRole("alert").filter({ hasText: 'ref "no-such-branch" does not name a commit in the suite\'s repository (its branches include' })).toBeVisible();
  await expect(page.getByRole("alert").filter({ hasText: "no-such-branch" })).not.toContainText("/");
  await expect(page).toHaveURL(/\/launch\?suite=zephyr-pipeline$/);
  expect(await count()).toBe(before);
  expectRefusal(problems, 400, "/api/v1/experiments");
});

// Last: the profile it makes changes what the preview above says about this fingerprint.
test("a calibration runs same-code trials and its page shows the noise profile it fed", async ({ page }) => {
  test.setTimeout(300_000);
  await signIn(page, "e2e-admin", "/launch?suite=zephyr-pipeline");
  await hydrated(page);
  await page.getByLabel("Treatment ref").fill("main");
  await page.getByLabel("Trials per arm").fill("2");
  await page.getByRole("button", { name: "Calibrate" }).click();
  await expect(page).toHaveURL(/\/experiments\/\d+$/);
  await expect(page.locator(".banner-verdict")).toContainText("calibration");
  await expect(page.getByRole("region", { name: "Progress" })).toHaveCount(0, { timeout: 240_000 });
  await expect(page.locator(".banner-verdict")).toContainText("calibration measured");
  const result = page.getByRole("region", { name: "Calibration" });
  await expect(result).toContainText(/went into noise profile #\d+ of suite zephyr-pipeline: now 2 trials from 1 calibration, not yet trusted/);
  await expect(result.locator("table.stages tbody tr").first()).toContainText(/±[\d.]+ %/);
  await expect(page.getByText("not judged yet")).toHaveCount(0);
  await expect(page.getByText("A calibration has no report to download")).toBeVisible();
  await looksRight(page, "experiment-calibration");
  await result.getByRole("link", { name: "The suite's noise profiles" }).click();
  await expect(page).toHaveURL(/\/suites\/zephyr-pipeline$/);
  await expect(page.getByText(/2 same-code trials|<strong>2<\/strong>|not yet trusted/).first()).toBeVisible();
  await looksRight(page, "suite-after-calibration");
});

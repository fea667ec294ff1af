import { test, expect, signIn, hydrated, expectRefusal } from "./fixtures";

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
  await expect(plan.locator(".trial-count")).toHaveText("2 trials");
  await expect(plan.locator("ol.commands li")).toHaveCount(2);
  await expect(plan.locator("ol.commands")).toContainText("datakit.py");
  await expect(plan.locator("code.sha")).toHaveCount(2);
  await expect(plan.locator("code.sha").first()).toHaveText(/^[0-9a-f]{12}$/);
  await page.screenshot({ path: "test-results/launch-preview.png", fullPage: true });

  await page.getByRole("button", { name: "Launch", exact: true }).click();
  await expect(page).toHaveURL(/\/experiments\/\d+$/);
  const live = page.getByRole("region", { name: "Progress" });
  await expect(live.locator(".live-count")).toHaveText(/^\d\/2 trials ended$/, { timeout: 20_000 });
  // The same document keeps receiving updates: a mark set now survives them.
  await page.evaluate(() => ((window as unknown as { mark: number }).mark = 1));
  await expect.poll(async () => Number(await live.getAttribute("data-updates")), { timeout: 60_000 }).toBeGreaterThan(3);
  expect(await page.evaluate(() => (window as unknown as { mark?: number }).mark)).toBe(1);
  await page.screenshot({ path: "test-results/launch-progress.png", fullPage: true });
  // When the verdict is stored the page shows it (and the progress section is gone).
  await expect(page.getByRole("region", { name: "Progress" })).toHaveCount(0, { timeout: 240_000 });
  await expect(page.locator(".banner-verdict .muted")).toHaveText("judged");
  await expect(page.locator(".banner-verdict .verdict")).not.toContainText("not judged");
});

test("the launch preview says what the planned trials can detect, and one click takes the trials a chosen change needs", async ({ page }) => {
  await signIn(page, "e2e-admin", "/launch?suite=zephyr-pipeline");
  await hydrated(page);
  await page.getByLabel("Treatment ref").fill("cheaper");
  await page.getByLabel("Trials per arm").fill("2");
  await page.getByLabel("Size the trials for a CPU change of (%)").fill("30");
  await page.getByRole("button", { name: "Preview" }).click();
  const power = page.getByRole("region", { name: "Plan" }).locator(".power");
  await expect(power.locator(".detectable")).toContainText(/Can detect ±[\d.]+ % with 2 trials an arm\./);
  await expect(power).toContainText("the default spread (uncalibrated)");
  const need = power.locator(".needed");
  await expect(need).toContainText(/±30 % needs about \d+ trials an arm\./);
  const n = Number((await need.textContent())!.match(/needs about (\d+) trials/)![1]);
  expect(n).toBeGreaterThan(2);
  await page.screenshot({ path: "test-results/launch-power.png", fullPage: true });
  await need.getByRole("button", { name: `Use ${n} trials` }).click();
  await expect(page.getByLabel("Trials per arm")).toHaveValue(String(n));
  await expect(page.getByRole("region", { name: "Plan" }).locator(".trial-count")).toHaveText(`${2 * n} trials`);
  await expect(power.locator(".needed")).toContainText(`±30 % needs ${n} trials an arm: this plan has them.`);
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
  const message = 'fingerprint field "workers": 9: must be between 1 and 4';
  await expect(page.getByRole("alert").filter({ hasText: message })).toBeVisible();
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
  await expect(page.getByRole("alert").filter({ hasText: 'ref "no-such-branch" does not name a commit' })).toBeVisible();
  await expect(page).toHaveURL(/\/launch\?suite=zephyr-pipeline$/);
  expect(await count()).toBe(before);
  expectRefusal(problems, 400, "/api/v1/experiments");
});

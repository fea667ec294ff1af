import { test, expect, signIn, hydrated, expectRefusal, looksRight } from "./fixtures";

test("an admin edits a suite: a bad value is named with its line, a good one is saved and used", async ({ page, problems }) => {
  // The canary below runs real trials, queued behind every other experiment (a re-run the launch tests
  // left running among them): its wait, not the default 30 s, bounds the test.
  test.setTimeout(240_000);
  await signIn(page, "e2e-admin", "/suites");
  await expect(page.getByRole("link", { name: "s3s-fs-warp" })).toBeVisible();
  await page.getByRole("link", { name: "zephyr-pipeline" }).click();
  await expect(page).toHaveURL(/\/suites\/zephyr-pipeline$/);
  await hydrated(page);
  // The launch tests (run before this file) left judged experiments: the page gathers their measurement.
  const measurement = page.getByRole("region", { name: "Measurement over recent experiments" });
  await expect(measurement.locator("tbody tr").first()).toBeVisible();
  await expect(measurement.locator("tbody tr").first()).toContainText(/ of \d+/);
  await looksRight(page, "suite-measurement");
  // A same-code canary (main against itself, real trials): judged, then counted on the page against the
  // promised rate, with each stage's spread.
  const origin = new URL(page.url()).origin;
  const launched = await page.request.post("/api/v1/experiments", {
    headers: { origin },
    data: { suite: "zephyr-pipeline", head: "main", canary: true, trials: 2 },
  });
  expect(launched.status(), await launched.text()).toBe(201);
  const id = (await launched.json()).id;
  await expect
    .poll(async () => (await (await page.request.get(`/api/v1/experiments/${id}`)).json()).status, { timeout: 180_000, intervals: [2000] })
    .toBe("judged");
  await page.reload();
  await hydrated(page);
  const canaries = page.getByRole("region", { name: "Same-code canaries" });
  await expect(canaries.locator("p.canary-rate")).toContainText(/^\d of 1 same-code canary claimed a change: .* against the promised 1 %/);
  await expect(canaries.locator("tbody tr").first()).toContainText(`#${id}`);
  await canaries.scrollIntoViewIfNeeded();
  await looksRight(page, "suite-canaries");
  const editor = page.getByLabel("Suite (TOML, the same fields as a suite file)");
  const original = await editor.inputValue();
  expect(original).toContain('name = "zephyr-pipeline"');

  await editor.fill(original.replace(/trials = 3/, "trials = 0"));
  await page.getByRole("button", { name: "Save the suite" }).click();
  await expect(page.getByRole("alert")).toContainText("defaults.trials 0: use 1–100");
  expectRefusal(problems, 400, "/api/v1/suites/zephyr-pipeline");

  await editor.fill(original.replace(/^description = .*$/m, 'description = "Edited in the browser"').replace(/trials = 3/, "trials = 2"));
  await page.getByRole("button", { name: "Save the suite" }).click();
  await expect(page.getByText("saved on this page")).toBeVisible();
  await expect(editor).toHaveValue(/description = "Edited in the browser"/);
  await looksRight(page, "suite-edit");
  // The launch form now starts from the edited defaults.
  await page.goto("/launch?suite=zephyr-pipeline");
  await expect(page.getByText("Edited in the browser")).toBeVisible();
  await expect(page.getByLabel("Trials per arm")).toHaveValue("2");
});

test("a warp suite's page shows its warp settings and notes, not pipeline fields", async ({ page }) => {
  await signIn(page, "e2e-admin", "/suites/s3s-fs-warp");
  await hydrated(page);
  const settings = page.locator("dl.warp-settings");
  await expect(settings.locator("dt")).toContainText(["Server", "Health", "Matrix", "Phase order", "Budgets", "Load tool"]);
  await expect(settings).toContainText("FAIL beyond 10 %, WARN beyond 5 % (relative to the baseline)");
  await expect(settings).toContainText("rounds 1–10 · duration 1s–5m");
  await expect(settings).toContainText("get-4KiB: s3s-fs writes a response's head and body separately");
  await expect(page.getByRole("heading", { name: "Noise profiles" })).toHaveCount(0);
  const toml = await page.getByLabel("Suite (TOML, the same fields as a suite file)").inputValue();
  for (const absent of ["command = []", "cpu = 0", 'ram = ""', "[resources]"]) expect(toml).not.toContain(absent);
  expect(toml).toContain("[warp.notes]");
  await looksRight(page, "suite-warp");
});

test("a viewer cannot open the suites", async ({ page, problems }) => {
  await signIn(page, "e2e-viewer", "/experiments");
  const response = await page.goto("/suites");
  expect(response?.status()).toBe(403);
  expectRefusal(problems, 403, "/suites");
});

test("an admin adds a schedule to a suite: a bad cron is named, a good one shows its next tick", async ({ page, problems }) => {
  await signIn(page, "e2e-admin", "/suites/zephyr-pipeline");
  await hydrated(page);
  await expect(page.getByRole("heading", { name: "Schedules" })).toBeVisible();
  await expect(page.getByText("None. A [[schedules]] entry")).toBeVisible();
  const editor = page.getByLabel("Suite (TOML, the same fields as a suite file)");
  const original = await editor.inputValue();
  const schedule = (cron: string) => `${original.trimEnd()}\n\n[[schedules]]\nname = "new-year"\ncron = "${cron}"\nref = "main"\nmode = "baseline"\n`;

  await editor.fill(schedule("0 25 * * *"));
  await page.getByRole("button", { name: "Save the suite" }).click();
  await expect(page.getByRole("alert")).toContainText('schedule "new-year"');
  expectRefusal(problems, 400, "/api/v1/suites/zephyr-pipeline");

  // 03:00 UTC on 1 January only: it will not fire while the tests run.
  await editor.fill(schedule("0 3 1 1 *"));
  // A save reloads the page itself; a reload of the test's own would race it (net::ERR_ABORTED, seen once).
  await Promise.all([page.waitForEvent("load"), page.getByRole("button", { name: "Save the suite" }).click()]);
  await expect(page.getByText("saved on this page")).toBeVisible();
  const row = page.locator("table.schedules tbody tr").filter({ hasText: "new-year" });
  await expect(row).toContainText("0 3 1 1 *");
  await expect(row).toContainText("baseline");
  await expect(row.locator("td").nth(4)).toHaveText(/^20\d\d-01-01 03:00 UTC$/);
  await looksRight(page, "suite-schedules");
});

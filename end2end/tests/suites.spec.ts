import { test, expect, signIn, hydrated, expectRefusal } from "./fixtures";

test("an admin edits a suite: a bad value is named with its line, a good one is saved and used", async ({ page, problems }) => {
  await signIn(page, "e2e-admin", "/suites");
  await expect(page.getByRole("link", { name: "s3s-fs-warp" })).toBeVisible();
  await page.getByRole("link", { name: "zephyr-pipeline" }).click();
  await expect(page).toHaveURL(/\/suites\/zephyr-pipeline$/);
  await hydrated(page);
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
  await page.screenshot({ path: "test-results/suite-edit.png", fullPage: true });
  // The launch form now starts from the edited defaults.
  await page.goto("/launch?suite=zephyr-pipeline");
  await expect(page.getByText("Edited in the browser")).toBeVisible();
  await expect(page.getByLabel("Trials per arm")).toHaveValue("2");
});

test("a viewer cannot open the suites", async ({ page, problems }) => {
  await signIn(page, "e2e-viewer", "/experiments");
  const response = await page.goto("/suites");
  expect(response?.status()).toBe(403);
  expectRefusal(problems, 403, "/suites");
});

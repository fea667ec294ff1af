import { test, expect, signIn, hydrated, expectRefusal, looksRight } from "./fixtures";
import { readFile } from "node:fs/promises";

test("the import form judges a warp compare CSV and opens the new experiment", async ({ page }) => {
  await signIn(page, "e2e-admin", "/import");
  await expect(page.getByRole("heading", { level: 1 })).toHaveText("Import results measured elsewhere");
  await hydrated(page);
  await page.getByLabel("Kind").selectOption("warp");
  await page.getByLabel("Title").fill("Imported from the form");
  await page.getByLabel("Treatment ref").fill("form-branch");
  await page.getByLabel("Cell 1 label").fill("put-4KiB/sync-on");
  await page.getByLabel("Cell 1 baseline_compare.csv").fill(await readFile("../judge/tests/data/warp/compare_fail.csv", "utf8"));
  await looksRight(page, "import-form");
  await page.getByRole("button", { name: "Import and judge" }).click();
  await expect(page).toHaveURL(/\/experiments\/\d+$/);
  await expect(page.getByRole("heading", { level: 1 })).toContainText("Imported from the form");
  await expect(page.getByRole("region", { name: "Verdict" })).toContainText("FAIL");
  await expect(page.getByText("Arbiter did not run this experiment")).toBeVisible();
});

test("a refused import says why and stays on the form", async ({ page, problems }) => {
  await signIn(page, "e2e-admin", "/import");
  await hydrated(page);
  await page.getByLabel("Title").fill("No trials");
  // The API's 400 is expected here: listen for it instead of failing on it.
  const refused = page.waitForResponse((r) => r.url().endsWith("/api/v1/imports"));
  await page.getByRole("button", { name: "Import and judge" }).click();
  expect((await refused).status()).toBe(400);
  await expect(page.getByRole("alert")).toContainText("control, treatment: give at least one trial");
  await expect(page).toHaveURL(/\/import$/);
  expectRefusal(problems, 400, "/api/v1/imports");
});

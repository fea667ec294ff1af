import { test, expect, signIn, hydrated, looksRight, expectRefusal } from "./fixtures";

test("an admin sees every user and the audit log of what was done", async ({ page }) => {
  await signIn(page, "e2e-admin", "/admin");
  await expect(page.getByRole("heading", { level: 1 })).toHaveText("Admin");
  const users = page.locator("table").first();
  await expect(users.locator("tbody tr").filter({ hasText: "e2e-admin" })).toContainText("admin");
  await expect(users.locator("tbody tr").filter({ hasText: "e2e-viewer" })).toContainText("viewer");
  // The accounts were made on the command line, and the audit log says so.
  const audit = page.locator("table").nth(1);
  await expect(audit.locator("tbody tr").filter({ hasText: "user.create" }).first()).toContainText("(command line)");
  // The demo's imports (on the command line, recorded as by e2e-admin) are there with their experiments.
  await expect(audit.locator("tbody tr").filter({ hasText: "experiment.import" }).first()).toContainText("e2e-admin");
  await looksRight(page, "admin");
});

test("a viewer is refused the admin page", async ({ page, problems }) => {
  await signIn(page, "e2e-viewer");
  const response = await page.goto("/admin");
  expect(response?.status()).toBe(403);
  expectRefusal(problems, 403, "/admin");
});

test("the account page makes an API token (shown once), lists it, and revokes it", async ({ page, browser, problems }) => {
  await signIn(page, "e2e-admin", "/account");
  await hydrated(page);
  await expect(page.getByText("Signed in as e2e-admin (admin).")).toBeVisible();
  await page.getByLabel("Name").fill("ci-nightly");
  await page.getByLabel("Role").selectOption("viewer");
  await page.getByLabel("Expires in (days)").fill("30");
  await page.getByRole("button", { name: "Make a token" }).click();
  const secret = page.getByRole("textbox", { name: "New token" });
  await expect(secret).toHaveValue(/^arb_[A-Za-z0-9_-]{43}$/);
  const token = await secret.inputValue();
  const row = page.locator("table.tokens tbody tr").filter({ hasText: "ci-nightly" });
  await expect(row).toContainText("viewer");
  await looksRight(page, "account-tokens");

  // The token works as a bearer credential, with the role it was given.
  const api = await browser.newContext();
  const read = await api.request.get("/api/v1/experiments?limit=1", { headers: { authorization: `Bearer ${token}` } });
  expect(read.status()).toBe(200);
  const launch = await api.request.post("/api/v1/experiments", {
    headers: { authorization: `Bearer ${token}` },
    data: { suite: "zephyr-pipeline", head: "cheaper", dry_run: true },
  });
  expect(launch.status(), "a viewer token cannot launch").toBe(403);

  // Revoked from the page: the row says when, and the token is refused.
  await row.getByRole("button", { name: "Revoke token ci-nightly" }).click();
  await expect(row.getByRole("button")).toHaveCount(0);
  await expect(row.locator("td.when").nth(3)).toContainText("UTC");
  const after = await api.request.get("/api/v1/experiments?limit=1", { headers: { authorization: `Bearer ${token}` } });
  expect(after.status()).toBe(401);
  await api.close();
  // After a reload the secret is gone for good; the token is listed, revoked.
  await page.reload();
  await expect(page.getByRole("textbox", { name: "New token" })).toHaveCount(0);
  await expect(page.locator("table.tokens tbody tr").filter({ hasText: "ci-nightly" }).locator("td.when").nth(3)).toContainText("UTC");

  // A bad value is named inline, in the server's words, and nothing is made.
  await page.getByLabel("Name").fill("   ");
  await hydrated(page);
  await page.getByRole("button", { name: "Make a token" }).click();
  await expect(page.getByRole("alert")).toContainText("give the token a name of 1–100 characters");
  await expect(page.locator("table.tokens tbody tr")).toHaveCount(1);
  expectRefusal(problems, 400, "/api/v1/tokens");
});

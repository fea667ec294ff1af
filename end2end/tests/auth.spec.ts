import { test, expect, signIn, PASSWORD, looksRight } from "./fixtures";

test("anonymous visitors are sent to sign in, and come back where they were going", async ({ page }) => {
  await page.goto("/experiments?kind=warp");
  await expect(page).toHaveURL(/\/login\?next=/);
  await expect(page.getByRole("heading", { level: 1 })).toHaveText("Sign in");
  await page.waitForLoadState("networkidle");
  await looksRight(page, "login");

  await page.getByLabel("User name").fill("e2e-viewer");
  await page.getByLabel("Password").fill("not the password at all");
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByRole("alert")).toHaveText("wrong user name or password");

  await page.getByLabel("User name").fill("e2e-viewer");
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page).toHaveURL(/\/experiments\?kind=warp$/);
  await expect(page.locator("select[name=kind]")).toHaveValue("warp");

  const header = page.locator("header form.user");
  await expect(header).toContainText("e2e-viewer");
  await header.getByRole("link", { name: "e2e-viewer" }).click();
  await expect(page).toHaveURL(/\/account$/);
  await expect(page.getByText("Signed in as e2e-viewer (viewer).")).toBeVisible();
  await expect(page.getByText("You have no API tokens.")).toBeVisible();
  // A viewer is told who makes tokens, and is offered no form that would be refused.
  await expect(page.getByText("API tokens are made by launchers and admins")).toBeVisible();
  await expect(page.getByRole("button", { name: "Make a token" })).toHaveCount(0);
  await looksRight(page, "account-viewer");
  await header.getByRole("button", { name: "Sign out" }).click();
  await expect(page).toHaveURL(/\/login$/);
  await page.goto("/experiments");
  await expect(page).toHaveURL(/\/login\?next=/);
});

test("a viewer cannot open the launch page; the API refuses a forged cross-site post", async ({ page }) => {
  await signIn(page, "e2e-viewer");
  const launch = await page.request.get("/launch", { maxRedirects: 0 });
  expect(launch.status()).toBe(403);
  expect(await launch.text()).toContain("needs the launcher role");

  const forged = await page.request.post("/logout", { headers: { origin: "http://evil.example" }, maxRedirects: 0 });
  expect(forged.status()).toBe(403);
  // Still signed in.
  await page.goto("/experiments");
  await expect(page.getByRole("heading", { level: 1 })).toHaveText("Experiments");
});

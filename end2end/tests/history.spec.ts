import { test, expect, signIn, looksRight } from "./fixtures";

test("history page renders, hydrates and navigates", async ({ page }) => {
  await signIn(page, "e2e-admin", "/");
  await expect(page.getByRole("heading", { level: 1 })).toHaveText("Experiments");
  await expect(page.getByRole("link", { name: "Dedup: heavier MinHash" })).toBeVisible();
  await expect(page.locator("select[name=kind] option")).toHaveText(["any", "pipeline", "warp"]);

  // Hydration: the theme switch does nothing until the wasm bundle has taken over the page,
  // so click until it responds.
  const theme = page.getByRole("button", { name: /Colour scheme/ });
  await expect(theme).toHaveText("◐ System");
  await expect(async () => {
    await theme.click();
    await expect(theme).not.toHaveText("◐ System", { timeout: 500 });
  }).toPass({ timeout: 20_000 });
  await expect(theme).toHaveText("☀ Light");
  await expect(page.locator("html")).toHaveAttribute("data-theme", "light");
  await theme.click();
  await expect(page.locator("html")).toHaveAttribute("data-theme", "dark");
  await looksRight(page, "history-dark");

  // The choice is remembered across a reload (localStorage, applied on hydration).
  await page.reload();
  await expect(page.locator("html")).toHaveAttribute("data-theme", "dark");
  await theme.click();
  await expect(page.locator("html")).not.toHaveAttribute("data-theme", /.*/);

  // Client-side navigation through the header.
  const nav = page.getByRole("navigation", { name: "Main" });
  await nav.getByRole("link", { name: "Launch" }).click();
  await expect(page).toHaveURL(/\/launch$/);
  await expect(page.getByRole("heading", { level: 1 })).toHaveText("Launch an experiment");
  await expect(nav.getByRole("link", { name: "Launch" })).toHaveAttribute("aria-current", "page");
  await nav.getByRole("link", { name: "Experiments" }).click();
  await expect(page).toHaveURL(/\/experiments$/);
  await looksRight(page, "history");
});

test("filters live in the URL, pages go back in time, and an unknown page is a 404", async ({ page }) => {
  await signIn(page, "e2e-viewer");
  const rows = page.locator("table.history tbody tr");
  await expect(rows).toHaveCount(50);
  await page.getByRole("link", { name: "Older experiments →" }).click();
  await expect(page).toHaveURL(/before=\d+\.\d+/);
  await expect(rows).toHaveCount(7);
  await expect(page.getByRole("link", { name: "put-4KiB nightly 1", exact: true })).toBeVisible();

  await page.goto("/experiments");
  await page.locator("select[name=kind]").selectOption("pipeline");
  await page.getByRole("button", { name: "Filter" }).click();
  await expect(page).toHaveURL(/kind=pipeline/);
  await expect(rows).toHaveCount(3);
  await expect(page.locator("select[name=kind]")).toHaveValue("pipeline");
  await looksRight(page, "history-filtered");

  await page.goto("/experiments?q=write%20buffer");
  await expect(rows).toHaveCount(1);
  await expect(rows.first()).toContainText("s3 hot path: smaller write buffer");
  await page.goto("/experiments?git=cpu-heavier&by=e2e-admin");
  await expect(rows).toHaveCount(1);
  await expect(rows.first()).toContainText("Dedup: heavier MinHash");
  await page.goto("/experiments?q=nothing-is-called-this");
  await expect(page.getByText("No experiment matches these filters")).toBeVisible();

  // Asked outside the page, so the expected 404 is not a console error of this page.
  const response = await page.request.get("/definitely/not/here");
  expect(response.status()).toBe(404);
  expect(await response.text()).toContain("There is no page at /definitely/not/here");
});

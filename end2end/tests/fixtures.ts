import { test as base, expect, type Page } from "@playwright/test";

// Every test fails on a console error or an uncaught page error, reported with the offending text.
export const test = base.extend<{ problems: string[] }>({
  problems: [
    async ({ page }, use) => {
      const problems: string[] = [];
      page.on("console", (msg) => {
        if (msg.type() === "error") problems.push(`console: ${msg.text()}`);
      });
      page.on("pageerror", (err) => problems.push(`pageerror: ${err.message}`));
      page.on("response", (res) => {
        if (res.status() >= 400) problems.push(`HTTP ${res.status()}: ${res.request().method()} ${res.url()}`);
      });
      // ERR_ABORTED is a request the page itself gave up, e.g. the bundle still loading when a form post
      // navigates away; a request the server failed shows up above as an HTTP status.
      page.on("requestfailed", (req) => {
        if (req.failure()?.errorText !== "net::ERR_ABORTED") problems.push(`request failed: ${req.url()} ${req.failure()?.errorText}`);
      });
      await use(problems);
      expect(problems, "no console errors, page errors or failed requests").toEqual([]);
    },
    { auto: true },
  ],
});

export { expect };

export const PASSWORD = process.env.E2E_PASSWORD ?? "";

/** Signs in through the real form, as a person would; lands on `next` (default: the experiments). */
export async function signIn(page: Page, user: string, next = "/experiments") {
  await page.goto(`/login?next=${encodeURIComponent(next)}`);
  await page.getByLabel("User name").fill(user);
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page).toHaveURL(new RegExp(next.replace(/[/?]/g, "\\$&") + "$"));
  // Let the bundle finish loading, so that a navigation right after does not abort it.
  await page.waitForLoadState("networkidle");
}

/** Waits until the wasm bundle has hydrated the page (buttons then act through the app, not as plain forms). */
export async function hydrated(page: Page) {
  await expect(page.locator("html")).toHaveAttribute("data-hydrated", "", { timeout: 20_000 });
}

/** Takes an expected refusal (HTTP status for a URL, and the console line the browser logs for it) out of
 *  the problems the fixture would otherwise fail the test on. */
export function expectRefusal(problems: string[], status: number, urlPart: string) {
  const expected = (p: string) =>
    (p.startsWith(`HTTP ${status}:`) && p.includes(urlPart)) ||
    (p.startsWith("console: Failed to load resource") && p.includes(`status of ${status}`));
  const kept = problems.filter((p) => !expected(p));
  expect(kept.length, "the expected refusal happened").toBeLessThan(problems.length);
  problems.splice(0, problems.length, ...kept);
}

/** What every page test checks of what a user sees: at the window's width (1280 px) the main column
 *  does not overflow sideways, and no number in a chart label or mark has more than 8 digits (a 40-digit axis
 *  tick is a bug even when everything else passes). Then a full-page screenshot to look at. */
export async function looksRight(page: Page, name: string) {
  const [scroll, client] = await page.locator("main").evaluate((e) => [e.scrollWidth, e.clientWidth]);
  expect(scroll, `${name}: the main column does not overflow at ${page.viewportSize()?.width} px`).toBeLessThanOrEqual(client);
  for (const label of await page.locator("svg.chart text").allTextContents()) {
    for (const number of label.match(/[\d.,]+/g) ?? []) {
      expect(number.replace(/\D/g, "").length, `${name}: a chart number nobody can read: ${label.trim()}`).toBeLessThanOrEqual(8);
    }
  }
  await page.screenshot({ path: `test-results/${name}.png`, fullPage: true });
}

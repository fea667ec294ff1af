import { test as base, expect } from "@playwright/test";

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
      page.on("requestfailed", (req) => problems.push(`request failed: ${req.url()} ${req.failure()?.errorText}`));
      await use(problems);
      expect(problems, "no console errors, page errors or failed requests").toEqual([]);
    },
    { auto: true },
  ],
});

export { expect };

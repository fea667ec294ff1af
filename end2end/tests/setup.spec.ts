import { test, expect, looksRight } from "./fixtures";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";

// A server of its own with no users: it prints the one-time setup link on its console, as a new
// install's does (the shared e2e server already has accounts, so it has no link).
const ROOT = path.resolve(__dirname, "../..");
const BIN = process.env.ARBITER_BIN ?? path.join(ROOT, "target/debug/arbiter");

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

async function freshServer(): Promise<{ origin: string; link: string; stop: () => Promise<void> }> {
  const data = await mkdtemp(path.join(tmpdir(), "arbiter-setup-"));
  const port = await freePort();
  // The repository's suites, as scripts/run.sh serves them: a new install offers the example.
  const child: ChildProcess = spawn(BIN, ["serve", "--addr", `127.0.0.1:${port}`, "--data-dir", data, "--site-root", path.join(ROOT, "target/site"), "--suites-dir", path.join(ROOT, "suites")], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  const link = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no setup link printed:\n${out}`)), 60_000);
    child.stdout!.on("data", (chunk) => {
      out += chunk;
      const m = out.match(/(http:\/\/\S+\/setup\?token=\S+)/);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.on("exit", (code) => reject(new Error(`the server exited (${code}):\n${out}`)));
  });
  const stop = async () => {
    child.kill("SIGTERM");
    await new Promise((r) => child.once("exit", r));
    await rm(data, { recursive: true, force: true });
  };
  return { origin: `http://127.0.0.1:${port}`, link, stop };
}

test("a fresh install's setup link creates the first admin once, then says it was used", async ({ page }) => {
  test.setTimeout(90_000);
  const server = await freshServer();
  try {
    expect(new URL(server.link).origin).toBe(server.origin);
    await page.goto(server.link);
    await expect(page.getByRole("heading", { level: 1 })).toHaveText("Create the first admin");
    await looksRight(page, "setup-fresh");
    await page.getByLabel("User name").fill("first-admin");
    await page.getByLabel("Password (at least 12 characters)").fill("a long enough passphrase");
    await page.getByLabel("Password again").fill("a long enough passphrase");
    await page.getByRole("button", { name: "Create admin and sign in" }).click();
    // Signed in as the new admin, who may open the admin page.
    await expect(page.locator("header form.user")).toContainText("first-admin");
    await page.goto(`${server.origin}/admin`);
    await expect(page.locator("table").first()).toContainText("first-admin");

    // The empty home page offers the example, and its link opens the launch form filled in.
    await page.goto(`${server.origin}/`);
    await expect(page.getByRole("heading", { name: "No experiments yet" })).toBeVisible();
    const example = page.locator("p.try a");
    await expect(example).toContainText("zephyr-pipeline, cpu-heavier against main");
    await looksRight(page, "first-hour-home");
    await example.click();
    await expect(page).toHaveURL(/\/launch\?suite=zephyr-pipeline&head=cpu-heavier&trials=auto$/);
    await expect(page.getByLabel("Treatment ref")).toHaveValue("cpu-heavier");
    await expect(page.getByLabel("Trials per arm")).toHaveValue("auto");
    await expect(page.locator("datalist#suite-branches option[value=cpu-heavier]")).toHaveCount(1);
    await looksRight(page, "first-hour-launch");

    // The same link again, in a fresh browser: it says in words that it was used.
    const stranger = await page.context().browser()!.newContext();
    const visitor = await stranger.newPage();
    await visitor.goto(server.link);
    await expect(visitor.getByRole("heading", { level: 1 })).toHaveText("This setup link was used");
    await expect(visitor.getByRole("link", { name: "sign in", exact: true })).toHaveAttribute("href", "/login");
    await expect(visitor.getByRole("button", { name: "Create admin and sign in" })).toHaveCount(0);
    await looksRight(visitor, "setup-used");
    await stranger.close();
  } finally {
    await server.stop();
  }
});

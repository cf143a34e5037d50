import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Where failed browser tests leave their screenshots (gitignored; CI keeps them as artifacts). */
export const SCREENSHOT_DIR = join(REPO, 'test-results', 'browser');

/**
 * Debian's Chromium (`apt-get install chromium`), or `SLUICE_CHROMIUM`. Never a downloaded
 * browser. Missing, it throws: the browser tests fail, loudly, rather than skip.
 */
export function chromiumPath(env: Record<string, string | undefined> = process.env): string {
  const given = env['SLUICE_CHROMIUM'];
  if (given) {
    if (!existsSync(given)) throw new Error(`SLUICE_CHROMIUM=${given} does not exist`);
    return given;
  }
  for (const name of ['chromium', 'chromium-browser']) {
    try {
      const found = execFileSync('which', [name], { encoding: 'utf8' }).trim();
      if (found) return found;
    } catch {
      // not on PATH; try the next name
    }
  }
  throw new Error(
    "the console browser tests need Chromium and found none on PATH: install Debian's package (`apt-get install chromium`; .ci/run does it when run as root) or set SLUICE_CHROMIUM to its binary",
  );
}

/**
 * Headless Chromium for a test file (one browser, a fresh page per test).
 *
 * @example
 * ```ts
 * const browser = await launchChromium();
 * const page = await browser.newPage();
 * ```
 */
export async function launchChromium(): Promise<Browser> {
  return await chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
}

/**
 * Runs `fn` on a new page; if it throws, saves a full-page screenshot named after `name` under
 * {@link SCREENSHOT_DIR} (and the page's errors in the message) before failing.
 */
export async function withPage(browser: Browser, name: string, fn: (page: Page) => Promise<void>): Promise<void> {
  const page = await browser.newPage();
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  // Confirmations (delete, bulk redrive) are accepted, as the user would.
  page.on('dialog', (d) => void d.accept());
  try {
    await fn(page);
  } catch (e) {
    mkdirSync(SCREENSHOT_DIR, { recursive: true });
    const file = join(SCREENSHOT_DIR, `${name.replace(/[^a-z0-9-]+/gi, '-')}.png`);
    await page.screenshot({ path: file, fullPage: true }).catch(() => undefined);
    const detail = problems.length ? `\n${problems.join('\n')}` : '';
    throw new Error(`${e instanceof Error ? e.message : String(e)}\nscreenshot: ${file}${detail}`, { cause: e });
  } finally {
    await page.close();
  }
}

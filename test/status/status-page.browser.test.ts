/**
 * The status page in a real browser: Debian's Chromium driven by playwright-core (no browser is
 * downloaded; CI installs it with scripts/install-browser.sh). Checks what only a browser can: the
 * page renders and shows a watched MR, its stylesheet passes the CSP, the explanation expands, it
 * fits a phone's width, and basic auth works with real credentials.
 */
import { statSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCREENSHOT, browser } from './browser.ts';
import { HEAD_SHA, TRAIN_REMOVAL, WATCH_RULE, serveFilled, type Served } from './status-fixture.ts';

/*
 * The few browser globals the functions passed to `evaluate` use (they run in the page, not in
 * Node). Declared here, in this module only, rather than adding the DOM library to the whole
 * project, where it would let `window` slip into server code unnoticed.
 */
declare const window: { innerWidth: number };
declare const document: { documentElement: { scrollWidth: number } };
declare function getComputedStyle(
  element: unknown,
  pseudo?: string,
): { display: string; content: string; borderTopLeftRadius: string };

describe('the status page in headless Chromium', () => {
  let served: Served;
  beforeAll(async () => {
    served = await serveFilled();
  });
  afterAll(() => served.close());

  it('shows a watched MR with the statuses it waits for', async () => {
    const context = await (await browser()).newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const blocked: string[] = [];
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) blocked.push(message.text());
    });
    const response = await page.goto(`${served.url}/status`);
    expect(response?.status()).toBe(200);
    expect(await page.title()).toBe('hookbot status');

    const row = page.locator('#merge-watch tbody tr', { hasText: WATCH_RULE });
    expect(await row.count()).toBe(1);
    expect(await row.isVisible()).toBe(true);
    const cells = await row.locator('td').allInnerTexts();
    expect(cells[0]).toContain('acme/web');
    expect(cells[0]).toContain('42');
    expect(cells[1]).toBe(WATCH_RULE);
    expect(cells[2]).toContain('ci/build');
    expect(cells[2]).toContain('ci/test');
    expect(cells[3]).toBe(HEAD_SHA.slice(0, 12));
    expect(await row.locator('code').getAttribute('title')).toBe(HEAD_SHA);
    expect(cells[4]).toContain('20 min ago');
    expect(await page.locator('#merge-watch h2').innerText()).toBe('Merge watch (1)');

    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    expect(statSync(SCREENSHOT).size).toBeGreaterThan(10_000);
    console.log(`status page screenshot: ${SCREENSHOT}`);

    // The inline stylesheet is allowed by its hash: the styles apply and nothing was blocked.
    expect(
      await page
        .locator('.card')
        .first()
        .evaluate((el) => getComputedStyle(el).borderTopLeftRadius),
    ).toBe('8px');
    expect(blocked).toEqual([]);
    await context.close();
  });

  it('shows a merge train: its car, what it waits for since when, when it may land, and the last removals', async () => {
    const context = await (await browser()).newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    expect((await page.goto(`${served.url}/status`))?.status()).toBe(200);
    const row = page.locator('#merge-queue tbody tr', { hasText: '!20' }).first();
    expect(await row.isVisible()).toBe(true);
    const text = await row.innerText();
    expect(text).toContain('car 1 (!20)');
    expect(text).toContain('hookbot/train/master/train/20');
    expect(text).toContain('waits for ci/test since');
    expect(text).toContain('2 min ago');
    expect(text).toContain('in 1 min');
    const removal = page.locator('#merge-queue tbody tr', { hasText: TRAIN_REMOVAL });
    expect(await removal.isVisible()).toBe(true);
    expect(await removal.innerText()).toContain('acme/api !21');
    await context.close();
  });

  it('shows an escaped title as text and runs no script from it', async () => {
    const context = await (await browser()).newContext();
    const page = await context.newPage();
    await page.goto(`${served.url}/status`);
    const heading = await page.locator('#decisions article h3').first().innerText();
    expect(heading).toContain('<script>window.pwned = 1</script> Fix "login" & <b>logout</b>');
    expect(await page.evaluate(() => 'pwned' in window)).toBe(false);
    expect(await page.locator('#decisions b').count()).toBe(0);
    await context.close();
  });

  it('expands a decision to its explanation', async () => {
    const context = await (await browser()).newContext();
    const page = await context.newPage();
    await page.goto(`${served.url}/status`);
    const explanation = page.locator('#decisions details pre').first();
    expect(await explanation.isVisible()).toBe(false);
    await page.locator('#decisions details summary').first().click();
    expect(await explanation.isVisible()).toBe(true);
    expect(await explanation.innerText()).toContain('execution:');
    await context.close();
  });

  it('fits a phone screen: no sideways scrolling, one labelled block per row', async () => {
    const context = await (
      await browser()
    ).newContext({ viewport: { width: 360, height: 740 }, isMobile: true });
    const page = await context.newPage();
    await page.goto(`${served.url}/status`);
    const widths = await page.evaluate(() => ({
      page: document.documentElement.scrollWidth,
      screen: window.innerWidth,
    }));
    expect(widths.page).toBeLessThanOrEqual(widths.screen);
    const cell = page.locator('#merge-watch tbody td').nth(1);
    expect(await cell.evaluate((el) => getComputedStyle(el).display)).toBe('block');
    expect(await cell.evaluate((el) => getComputedStyle(el, '::before').content)).toBe('"Rule: "');
    await page.screenshot({ path: SCREENSHOT.replace(/\.png$/, '-phone.png'), fullPage: true });
    await context.close();
  });
});

describe('the status page behind basic auth, in headless Chromium', () => {
  let served: Served;
  beforeAll(async () => {
    served = await serveFilled({ auth: { username: 'ops', password: 'correct horse' } });
  });
  afterAll(() => served.close());

  it('without credentials the browser is challenged and, having none, shows nothing', async () => {
    const context = await (await browser()).newContext();
    const page = await context.newPage();
    // Headless Chromium answers the 401 challenge (WWW-Authenticate: Basic) by cancelling it.
    await expect(page.goto(`${served.url}/status`)).rejects.toThrow(/ERR_INVALID_AUTH_CREDENTIALS/);
    expect(await page.locator('#merge-watch').count()).toBe(0);
    await context.close();
  });

  const cases: { name: string; credentials: { username: string; password: string }; status: number }[] = [
    {
      name: 'with wrong credentials it gets 401',
      credentials: { username: 'ops', password: 'wrong' },
      status: 401,
    },
    {
      name: 'with the right credentials it shows the page',
      credentials: { username: 'ops', password: 'correct horse' },
      status: 200,
    },
  ];
  for (const { name, credentials, status } of cases)
    it(name, async () => {
      const context = await (await browser()).newContext({ httpCredentials: credentials });
      const page = await context.newPage();
      const response = await page.goto(`${served.url}/status`);
      expect(response?.status()).toBe(status);
      expect(await page.locator('#merge-watch').count()).toBe(status === 200 ? 1 : 0);
      await context.close();
    });
});

import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from './bundling.ts';

/**
 * The journal viewer (infra/viewer/, decision 0016) as the one self-contained page a deployment
 * serves at `GET /viewer` (decision 0026): `viewer.js` inlined into `index.html`, so the page works
 * at `/<stage>/viewer` and `/<stage>/viewer/…` alike, with no second request. Pure ASCII (other
 * characters as `&#x…;` in the markup, `\u{…}` in the script), so API Gateway's template decoding
 * cannot change a byte. The local stack keeps serving the two files as they are.
 */

const VIEWER_DIR = join(REPO_ROOT, 'infra', 'viewer');
const SCRIPT_TAG = '<script type="module" src="viewer.js"></script>';

const codePoint = (char: string): string => (char.codePointAt(0) ?? 0).toString(16);
/** Every character beyond ASCII (`\p{ASCII}` is U+0000–U+007F). */
const NON_ASCII = /\P{ASCII}/gu;
const asciiHtml = (text: string): string => text.replace(NON_ASCII, (char) => `&#x${codePoint(char)};`);
const asciiScript = (text: string): string => text.replace(NON_ASCII, (char) => `\\u{${codePoint(char)}}`);

export interface ViewerPage {
  readonly html: string;
  /** `sha256-…` of the inline script, for the page's Content-Security-Policy. */
  readonly scriptHash: string;
}

export const deployedViewerPage = (): ViewerPage => {
  const index = readFileSync(join(VIEWER_DIR, 'index.html'), 'utf8');
  const script = asciiScript(readFileSync(join(VIEWER_DIR, 'viewer.js'), 'utf8'));
  if (!index.includes(SCRIPT_TAG))
    throw new Error(`infra/viewer/index.html no longer loads viewer.js as ${SCRIPT_TAG}`);
  if (/<\/script/i.test(script))
    throw new Error('infra/viewer/viewer.js contains "</script": it cannot be inlined');
  const [before, after] = index.split(SCRIPT_TAG) as [string, string];
  const inline = `\n${script}`;
  return {
    html: `${asciiHtml(before)}<script type="module">${inline}</script>${asciiHtml(after)}`,
    scriptHash: `sha256-${createHash('sha256').update(inline, 'utf8').digest('base64')}`,
  };
};

/**
 * What the page may do: its own inline script and styles, and fetch over https from anywhere (it
 * reads this API, or another A2A server the user names); no frames, forms, plugins or base changes.
 */
export const viewerContentSecurityPolicy = (page: ViewerPage): string =>
  [
    "default-src 'none'",
    `script-src '${page.scriptHash}'`,
    "style-src 'unsafe-inline'",
    "connect-src 'self' https:",
    "img-src 'self' data:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');

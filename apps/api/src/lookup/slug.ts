import { show, type Parsed } from '../http/params.ts';

/**
 * The slug lookup's input: an event slug, a market slug or a full URL, normalised into what
 * it names. Pure, no I/O.
 *
 * Accepted forms (scheme and host optional, query string and fragment dropped, trailing
 * slashes ignored, path segments percent-decoded):
 *   <slug>                                   bare slug: an event or a market
 *   https://polymarket.com/event/<e>         an event
 *   https://polymarket.com/event/<e>/<m>     a market of an event
 *   https://polymarket.com/market/<m>        legacy market URL
 *   https://polymarket.com/sports/…/<s>      any other path (sports, locales): its last segment
 * `event` / `market` segments are found anywhere in the path, so a locale prefix
 * (`/es/event/<e>`) works too.
 */

export type SlugQuery =
  | { form: 'slug'; slug: string }
  | { form: 'event'; event: string }
  | { form: 'event-market'; event: string; market: string }
  | { form: 'market'; market: string };

export interface LookupAttempt {
  kind: 'event' | 'market';
  slug: string;
}

/** Longest accepted input (a URL) and slug. */
export const SLUG_LIMITS = { inputMax: 2048, slugMax: 256 } as const;

/**
 * What a venue slug may hold: letters, digits and combining marks of any script, `-`, `_`,
 * `.`, `~` (the URL-safe punctuation). Venue slugs are lower-case ASCII in practice; the
 * wider set only avoids refusing an odd one. Case is kept: slugs are case-sensitive.
 */
const SLUG = /^[\p{L}\p{N}\p{M}._~-]+$/u;
const SCHEME = /^([a-z][a-z0-9+.-]*):\/\//i;
/** A first segment that is a host name (`polymarket.com`, `www.polymarket.com:443`). */
const HOST = /^(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z]{2,63}(?::\d{1,5})?$/i;

const SLUG_RULE = `letters, digits, '-', '_', '.' or '~', at most ${SLUG_LIMITS.slugMax} characters`;

/**
 * A slug's characters and length. Messages follow the parameter's name (the error handler
 * writes "slug <message>"): `what` names the part of a URL at fault, null for a bare slug.
 */
function checkSlug(s: string, what: string | null): Parsed<string> {
  if (s.length <= SLUG_LIMITS.slugMax && s !== '.' && s !== '..' && SLUG.test(s)) return { ok: true, value: s };
  return { ok: false, message: what === null ? `must be ${SLUG_RULE}, or a URL; got ${show(s)}` : `has an invalid ${what} ${show(s)} (${SLUG_RULE})` };
}

function decodeSegment(seg: string): string | null {
  try {
    return decodeURIComponent(seg);
  } catch {
    return null;
  }
}

/** Path segments (after host, before query / fragment) → what they name. */
function fromPath(path: string): Parsed<SlugQuery> {
  const segs: string[] = [];
  for (const raw of path.split('/')) {
    if (raw === '') continue;
    const d = decodeSegment(raw);
    if (d === null) return { ok: false, message: `has malformed percent-encoding in ${show(raw)}` };
    segs.push(d.trim());
  }
  const parts = segs.filter((s) => s !== '');
  if (parts.length === 0) return { ok: false, message: 'names no event or market: give a slug or a URL such as https://polymarket.com/event/<slug>' };
  const lower = parts.map((p) => p.toLowerCase());
  const ev = lower.indexOf('event');
  const mk = lower.indexOf('market');
  if (ev !== -1 && (mk === -1 || ev < mk)) {
    const event = parts[ev + 1];
    if (event === undefined) return { ok: false, message: 'is an event URL without the event slug (/event/<slug>)' };
    const e = checkSlug(event, 'event slug');
    if (!e.ok) return e;
    const market = parts[ev + 2];
    if (market === undefined) return { ok: true, value: { form: 'event', event: e.value } };
    const m = checkSlug(market, 'market slug');
    if (!m.ok) return m;
    return { ok: true, value: { form: 'event-market', event: e.value, market: m.value } };
  }
  if (mk !== -1) {
    const market = parts[mk + 1];
    if (market === undefined) return { ok: false, message: 'is a market URL without the market slug (/market/<slug>)' };
    const m = checkSlug(market, 'market slug');
    return m.ok ? { ok: true, value: { form: 'market', market: m.value } } : m;
  }
  // Sports pages and anything else: the event is the last segment.
  const s = checkSlug(parts[parts.length - 1]!, 'slug');
  return s.ok ? { ok: true, value: { form: 'slug', slug: s.value } } : s;
}

/** A slug or URL as typed or pasted → what to look up; failures say what is wrong. */
export function parseSlugInput(raw: string): Parsed<SlugQuery> {
  const input = raw.trim();
  if (input === '') return { ok: false, message: 'must not be empty' };
  if (input.length > SLUG_LIMITS.inputMax) return { ok: false, message: `must be at most ${SLUG_LIMITS.inputMax} characters` };
  // Control characters have no place in a slug or a URL (and would confuse logs).
  if (/[\u0000-\u001f\u007f]/.test(input)) return { ok: false, message: 'must not contain control characters' };

  let rest = input;
  const scheme = SCHEME.exec(rest);
  if (scheme) {
    if (!/^https?$/i.test(scheme[1]!)) return { ok: false, message: `must be a slug or an http(s) URL, got a ${show(scheme[1]!)} URL` };
    rest = rest.slice(scheme[0].length);
  } else if (rest.startsWith('//')) {
    rest = rest.slice(2); // scheme-relative URL
  }
  // Query string and fragment are dropped, whatever the form.
  rest = rest.replace(/[?#].*$/s, '');
  if (scheme || input.startsWith('//')) {
    // The host (with any user info or port) is everything up to the first slash.
    const slash = rest.indexOf('/');
    rest = slash === -1 ? '' : rest.slice(slash);
  } else if (rest.includes('/')) {
    // A URL without its scheme (`polymarket.com/event/x`) or a bare path (`/event/x`, `event/x`).
    const first = rest.replace(/^\/+/, '').split('/')[0] ?? '';
    if (!rest.startsWith('/') && HOST.test(first)) rest = rest.slice(first.length);
  } else {
    // A bare slug. The query parameter was already percent-decoded once, so `%` is literal.
    const s = checkSlug(rest.trim(), null);
    return s.ok ? { ok: true, value: { form: 'slug', slug: s.value } } : s;
  }
  return fromPath(rest);
}

/**
 * The lookups a query means, in order; the first that finds something answers. A bare
 * slug is tried as an event first (an event's page is what a Polymarket link usually
 * names), then as a market; URLs try what they name first and the other reading after.
 */
export function lookupPlan(q: SlugQuery): LookupAttempt[] {
  switch (q.form) {
    case 'slug':
      return [
        { kind: 'event', slug: q.slug },
        { kind: 'market', slug: q.slug },
      ];
    case 'event':
      return [
        { kind: 'event', slug: q.event },
        { kind: 'market', slug: q.event },
      ];
    case 'event-market':
      return [
        { kind: 'market', slug: q.market },
        { kind: 'event', slug: q.event },
      ];
    case 'market':
      return [
        { kind: 'market', slug: q.market },
        { kind: 'event', slug: q.market },
      ];
  }
}

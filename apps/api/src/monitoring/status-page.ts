import { VENUE_NAMES, formatAge, formatBytes, type MonitoringStatus, type VenueState } from './status.ts';

/**
 * The public status page: one self-contained HTML document rendered from the status (no
 * script, no external asset, no build step). It refreshes itself with a meta refresh. Every
 * value that reaches the markup goes through `esc`, attribute values included.
 */

export const STATUS_PAGE_REFRESH_S = 10;

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function esc(v: unknown): string {
  return String(v ?? '').replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

export const VENUE_STATE_LABELS: Record<VenueState, string> = {
  up: 'Operational',
  degraded: 'Degraded',
  down: 'Down',
  off: 'Not captured',
  unknown: 'Unknown',
};

const OVERALL: Record<MonitoringStatus['status'], string> = {
  ok: 'All systems operational',
  degraded: 'Partially degraded',
  down: 'Service disruption',
};

/** Colour class of a component state. */
function tone(state: string): 'good' | 'warn' | 'bad' | 'mute' {
  if (state === 'up' || state === 'ok') return 'good';
  if (state === 'degraded' || state === 'lagging' || state === 'behind' || state === 'paused') return 'warn';
  if (state === 'down') return 'bad';
  return 'mute';
}

const int = (n: number | null) => (n === null ? '–' : Math.round(n).toLocaleString('en-US'));
const dec = (n: number) => n.toLocaleString('en-US', { maximumFractionDigits: 1 });
const capital = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

function ago(at: string | null, ageMs: number | null): string {
  if (at === null || ageMs === null) return '<span class="mute">never</span>';
  return `<time datetime="${esc(at)}" title="${esc(at)}">${esc(formatAge(ageMs))} ago</time>`;
}

function badge(state: string, label: string): string {
  return `<span class="badge ${tone(state)}">${esc(label)}</span>`;
}

function venueRows(s: MonitoringStatus): string {
  return s.venues
    .map(
      (v) => `
      <tr class="venue" data-venue="${esc(v.venue)}" data-state="${esc(v.state)}">
        <th scope="row">${esc(v.name)}</th>
        <td class="state">${badge(v.state, VENUE_STATE_LABELS[v.state])}</td>
        <td class="detail">${esc(v.detail)}</td>
        <td class="num">${v.connections === 0 ? '–' : `${esc(int(v.connected))} / ${esc(int(v.connections))}`}</td>
        <td class="num">${esc(int(v.markets))}</td>
        <td class="freshness">${ago(v.last_event_at, v.last_event_age_ms)}</td>
        <td class="num rate">${esc(dec(v.events_per_second))}</td>
        <td class="num">${esc(int(v.kafka_lag))}</td>
      </tr>`,
    )
    .join('');
}

function pipelineRows(s: MonitoringStatus): string {
  const r = s.rollup;
  const oldest = r.oldest_pending
    ? `oldest: ${esc(r.oldest_pending.venue)} ${esc(r.oldest_pending.market)}${r.oldest_pending.dates.length ? ` (${esc(r.oldest_pending.dates.join(', '))})` : ''}, pending ${esc(formatAge(r.oldest_pending.age_ms))}`
    : '';
  const rows = [
    {
      id: 'kafka',
      name: 'Kafka',
      state: s.kafka.state,
      detail: esc(s.kafka.detail),
      figures: `consumer lag ${esc(int(s.kafka.consumer_lag))}${s.kafka.checked_at ? `, checked ${esc(s.kafka.checked_at.slice(11, 19))} UTC` : ''}`,
    },
    {
      id: 'sink',
      name: 'Sink (Kafka → ClickHouse)',
      state: s.sink.state,
      detail: esc(s.sink.detail),
      figures: `${esc(dec(s.sink.stored_per_second))} records/s, last stored ${s.sink.last_stored_at ? ago(s.sink.last_stored_at, Date.parse(s.time) - Date.parse(s.sink.last_stored_at)) : '<span class="mute">never</span>'}`,
    },
    {
      id: 'rollup',
      name: 'Summary rollups',
      state: r.state,
      detail: esc(r.detail),
      figures:
        r.waiting === null
          ? '–'
          : `queue: ${esc(int(r.waiting))} waiting, ${esc(int(r.active))} active, ${esc(int(r.delayed))} delayed, ${esc(int(r.failed))} failed; ${esc(int(r.pending_assets))} assets pending${oldest ? `<br><span class="small">${oldest}</span>` : ''}`,
    },
  ];
  return rows
    .map(
      (x) => `
      <tr class="component" data-component="${esc(x.id)}" data-state="${esc(x.state)}">
        <th scope="row">${esc(x.name)}</th>
        <td class="state">${badge(x.state, capital(x.state))}</td>
        <td class="detail">${x.detail}</td>
        <td>${x.figures}</td>
      </tr>`,
    )
    .join('');
}

function storeRows(s: MonitoringStatus): string {
  return (['clickhouse', 'redis'] as const)
    .map((k) => {
      const h = s.stores[k];
      const state = h.ok ? 'up' : 'down';
      return `
      <tr class="store" data-store="${esc(k)}" data-state="${esc(state)}">
        <th scope="row">${k === 'clickhouse' ? 'ClickHouse' : 'Redis'}</th>
        <td class="state">${badge(state, h.ok ? 'Operational' : 'Unreachable')}</td>
        <td class="num">${h.latency_ms === null ? '–' : `${esc(int(h.latency_ms))} ms`}</td>
      </tr>`;
    })
    .join('');
}

function footprintRows(s: MonitoringStatus): string {
  const f = s.footprint;
  if (f.state !== 'ok') return `<tr><td colspan="6" class="mute">Not available: ${esc(f.detail)}.</td></tr>`;
  const row = (attr: string, name: string, x: { rows: number; bytes_on_disk: number; data_uncompressed_bytes: number; parts: number }, perRow: number | null) => `
      <tr ${attr}>
        <th scope="row">${esc(name)}</th>
        <td class="num">${esc(int(x.rows))}</td>
        <td class="num">${esc(formatBytes(x.bytes_on_disk))}</td>
        <td class="num">${esc(formatBytes(x.data_uncompressed_bytes))}</td>
        <td class="num">${esc(int(x.parts))}</td>
        <td class="num">${perRow === null ? '–' : esc(dec(perRow))}</td>
      </tr>`;
  return (
    f.tables.map((t) => row(`class="table" data-table="${esc(t.table)}"`, t.table, t, t.bytes_per_row)).join('') +
    row('class="total" data-total="all"', 'All tables', f.total!, null) +
    row('class="total" data-total="raw"', 'Raw events', f.raw!, f.raw!.bytes_per_row)
  );
}

function processRows(s: MonitoringStatus): string {
  if (s.processes.length === 0) return '<tr><td colspan="3" class="mute">No ingestor process has reported.</td></tr>';
  return s.processes
    .map(
      (p) => `
      <tr class="process" data-state="${p.live ? 'live' : 'stale'}">
        <th scope="row">worker ${esc(p.worker_id)} (${esc(p.roles.join(' + ') || 'no role')})</th>
        <td class="state">${badge(p.live ? 'up' : 'down', p.live ? 'Reporting' : 'Not reporting')}</td>
        <td>last report ${ago(p.last_report_at, p.last_report_age_ms)}</td>
      </tr>`,
    )
    .join('');
}

function outageRows(s: MonitoringStatus): string {
  if (s.outages.length === 0) return '<tr><td colspan="5" class="mute">No outage declared recently.</td></tr>';
  const when = (iso: string) => `${esc(iso.replace('T', ' ').slice(0, 16))} UTC`;
  return s.outages
    .map(
      (o) => `
      <tr class="outage" data-outage="${esc(o.id)}" data-state="${esc(o.state)}">
        <th scope="row">${esc(VENUE_NAMES[o.venue])}</th>
        <td class="state">${badge(o.state === 'active' ? 'degraded' : o.state === 'upcoming' ? 'unknown' : 'off', o.state === 'active' ? 'Ongoing' : o.state === 'upcoming' ? 'Planned' : 'Ended')}</td>
        <td><time datetime="${esc(o.start)}">${when(o.start)}</time></td>
        <td><time datetime="${esc(o.end)}">${when(o.end)}</time></td>
        <td>${esc(o.reason)}</td>
      </tr>`,
    )
    .join('');
}

const CSS = `
:root { color-scheme: light; --good:#137333; --good-bg:#e6f4ea; --warn:#8a5300; --warn-bg:#fef3d6; --bad:#a50e0e; --bad-bg:#fce8e6; --mute:#5f6368; --mute-bg:#f1f3f4; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #202124; background: #fafafa; }
main { max-width: 1080px; margin: 0 auto; padding: 24px 16px 40px; }
h1 { font-size: 22px; margin: 0 0 16px; }
h2 { font-size: 16px; margin: 28px 0 8px; }
.overall { border-radius: 8px; padding: 14px 18px; font-weight: 600; font-size: 17px; }
.overall ul { margin: 8px 0 0; padding-left: 20px; font-weight: 400; font-size: 14px; }
.overall.good { background: var(--good-bg); color: var(--good); }
.overall.warn { background: var(--warn-bg); color: var(--warn); }
.overall.bad { background: var(--bad-bg); color: var(--bad); }
table { width: 100%; border-collapse: collapse; background: #fff; border: 1px solid #e0e0e0; border-radius: 8px; overflow: hidden; }
th, td { text-align: left; padding: 9px 12px; border-top: 1px solid #eee; vertical-align: top; }
thead th { border-top: 0; font-size: 12px; text-transform: uppercase; letter-spacing: .04em; color: var(--mute); background: #f8f9fa; }
tbody th { font-weight: 600; white-space: nowrap; }
.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
.badge { display: inline-block; padding: 2px 9px; border-radius: 999px; font-size: 13px; font-weight: 600; white-space: nowrap; }
.badge.good { background: var(--good-bg); color: var(--good); }
.badge.warn { background: var(--warn-bg); color: var(--warn); }
.badge.bad { background: var(--bad-bg); color: var(--bad); }
.badge.mute { background: var(--mute-bg); color: var(--mute); }
.mute { color: var(--mute); }
.small { font-size: 13px; color: var(--mute); }
tr.total th, tr.total td { background: #f8f9fa; font-weight: 600; }
footer { margin-top: 28px; font-size: 13px; color: var(--mute); }
`;

export function renderStatusPage(s: MonitoringStatus, opts: { jsonUrl: string }): string {
  const overallTone = s.status === 'ok' ? 'good' : s.status === 'degraded' ? 'warn' : 'bad';
  const reasons = s.reasons.length ? `<ul>${s.reasons.map((r) => `<li>${esc(r)}</li>`).join('')}</ul>` : '';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="refresh" content="${STATUS_PAGE_REFRESH_S}">
<title>booktape status: ${esc(OVERALL[s.status])}</title>
<style>${CSS}</style>
</head>
<body>
<main>
  <h1>booktape status</h1>
  <section class="overall ${overallTone}" id="overall" data-status="${esc(s.status)}">${esc(OVERALL[s.status])}${reasons}</section>
${s.operator_routes_open ? `  <section class="overall warn warning" id="operator-routes-open">Operator routes are open: this service runs without an admin token.</section>\n` : ''}
  <h2>Venues</h2>
  <table id="venues">
    <thead><tr><th>Venue</th><th>State</th><th>Detail</th><th class="num">Connections</th><th class="num">Markets</th><th>Last event</th><th class="num">Events/s</th><th class="num">Kafka lag</th></tr></thead>
    <tbody>${venueRows(s)}
    </tbody>
  </table>

  <h2>Pipeline</h2>
  <table id="pipeline">
    <thead><tr><th>Component</th><th>State</th><th>Detail</th><th>Figures</th></tr></thead>
    <tbody>${pipelineRows(s)}
    </tbody>
  </table>

  <h2>Stores</h2>
  <table id="stores">
    <thead><tr><th>Store</th><th>State</th><th class="num">Response</th></tr></thead>
    <tbody>${storeRows(s)}
    </tbody>
  </table>

  <h2>Storage</h2>
  <table id="footprint" data-state="${esc(s.footprint.state)}">
    <thead><tr><th>Table</th><th class="num">Rows</th><th class="num">On disk</th><th class="num">Uncompressed</th><th class="num">Parts</th><th class="num">Bytes/row</th></tr></thead>
    <tbody>${footprintRows(s)}
    </tbody>
  </table>
  <p class="small">${esc(s.footprint.state === 'ok' ? `Active parts${s.footprint.scope === 'this_node' ? " of this ClickHouse node's tables only (a cluster's other shards and replicas are not counted)" : ''}, measured ${s.footprint.measured_at!.slice(11, 19)} UTC.` : '')}</p>

  <h2>Declared outages</h2>
  <table id="outages">
    <thead><tr><th>Venue</th><th>State</th><th>From</th><th>To</th><th>Reason</th></tr></thead>
    <tbody>${outageRows(s)}
    </tbody>
  </table>

  <h2>Capture and sink processes</h2>
  <table id="processes">
    <thead><tr><th>Process</th><th>State</th><th>Reports</th></tr></thead>
    <tbody>${processRows(s)}
    </tbody>
  </table>

  <footer>Updated <time datetime="${esc(s.time)}">${esc(s.time.replace('T', ' ').slice(0, 19))} UTC</time>; this page refreshes every ${STATUS_PAGE_REFRESH_S} s.
  Machine-readable: <a href="${esc(opts.jsonUrl)}">${esc(opts.jsonUrl)}</a></footer>
</main>
</body>
</html>
`;
}

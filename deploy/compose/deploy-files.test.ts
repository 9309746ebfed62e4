import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';

/**
 * The compose deployment's files hang together, checked without Docker (none runs where
 * the tests run): the compose file parses, every file it mounts exists, Prometheus scrapes
 * the API where it listens with the secret the compose file grants it, Grafana's dashboard
 * provider points where the dashboards are mounted, and the dashboard queries only metrics
 * the API serves on /metrics.
 */

const COMPOSE_DIR = path.dirname(fileURLToPath(import.meta.url));
const REPO_ROOT = path.resolve(COMPOSE_DIR, '../..');
const read = (rel: string) => readFileSync(path.join(COMPOSE_DIR, rel), 'utf8');

interface Service {
  environment?: Record<string, string>;
  volumes?: string[];
  secrets?: string[];
  command?: string[];
}
const compose = parseYaml(read('docker-compose.yml'), { merge: true }) as { services: Record<string, Service>; secrets: Record<string, { environment?: string; file?: string }>; volumes: Record<string, unknown> };
const prometheus = parseYaml(read('prometheus/prometheus.yml')) as {
  scrape_configs: Array<{ job_name: string; metrics_path: string; authorization: { type: string; credentials_file: string }; dns_sd_configs: Array<{ names: string[]; port: number }> }>;
};
const dashboard = JSON.parse(read('grafana/dashboards/booktape.json')) as {
  uid: string;
  panels: Array<{ id: number; type: string; title: string; datasource?: { uid: string }; targets?: Array<{ refId: string; expr: string; datasource: { uid: string } }> }>;
};

/** Host side of a bind mount (`./x:/y[:ro]`); null for a named volume. */
function bindSource(volume: string): string | null {
  const source = volume.split(':')[0]!;
  return source.startsWith('.') || source.startsWith('/') ? source : null;
}

describe('deploy/compose', () => {
  it('mounts only files that exist, and declares every named volume and secret it uses', () => {
    for (const [name, service] of Object.entries(compose.services)) {
      for (const v of service.volumes ?? []) {
        const source = bindSource(v);
        if (source === null) expect(compose.volumes, `${name}: volume ${v}`).toHaveProperty(v.split(':')[0]!);
        else expect(existsSync(path.resolve(COMPOSE_DIR, source)), `${name}: ${source}`).toBe(true);
      }
      for (const s of service.secrets ?? []) expect(compose.secrets, `${name}: secret ${s}`).toHaveProperty(s);
    }
    // Every app command runs its compiled entry point with plain Node: dist/main.js, built
    // from a src/main.ts that exists (scripts/build.mjs maps src/X.ts to dist/X.js).
    for (const app of ['ingestor', 'api', 'rollup-worker']) {
      expect(compose.services[app]!.command, app).toEqual(['node', `apps/${app}/dist/main.js`]);
      expect(existsSync(path.join(REPO_ROOT, 'apps', app, 'src/main.ts')), app).toBe(true);
    }
  });

  it('builds the apps in a build stage and runs compiled JavaScript with production dependencies only', () => {
    const dockerfile = read('Dockerfile');
    const instructions = dockerfile.split('\n').filter((l) => l.trim() && !l.trimStart().startsWith('#'));
    const stages = instructions.filter((l) => /^FROM /.test(l));
    expect(stages).toHaveLength(2);
    expect(stages[0]).toMatch(/^FROM \S+ AS build$/);
    const [buildStage, runStage] = dockerfile.split(/^FROM .*$/m).slice(1) as [string, string];
    expect(buildStage).toContain('npm ci --include=dev');
    expect(buildStage).toContain('npm run build');
    expect(buildStage).toContain('npm prune --omit=dev');
    // The sources are gone from what the runtime stage copies, so nothing can fall back to them.
    expect(buildStage).toMatch(/rm -rf apps\/\*\/src libs\/\*\/src/);
    expect(runStage).toContain('COPY --from=build');
    expect(runStage).not.toMatch(/npm (ci|install)/);
    expect(runStage).toContain('NODE_ENV=production');
    expect(instructions.at(-1)).toBe('CMD ["node", "apps/api/dist/main.js"]');
    // tsx is a development tool: no command in the image or the compose file names it.
    expect(instructions.join('\n')).not.toMatch(/\btsx\b|\bnpx\b/);
    for (const [name, service] of Object.entries(compose.services)) expect((service.command ?? []).join(' '), name).not.toMatch(/\btsx\b|\bnpx\b/);
    // What a developer built locally never enters the build context; the image builds its own.
    const ignored = read('Dockerfile.dockerignore').split('\n');
    expect(ignored).toEqual(expect.arrayContaining(['**/node_modules', '**/dist', '.build']));
    // `npm run build` is what the build stage runs.
    const scripts = (JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    expect(scripts.build).toBe('node scripts/build.mjs');
  });

  it('has Prometheus scrape the API where it listens, with the admin token the API is given', () => {
    const api = compose.services.api!;
    const job = prometheus.scrape_configs.find((j) => j.job_name === 'booktape-api')!;
    expect(job.metrics_path).toBe('/metrics');
    expect(job.dns_sd_configs[0]!.names).toEqual(['api']);
    expect(String(job.dns_sd_configs[0]!.port)).toBe(api.environment!.PORT);
    // The API reads the token from ADMIN_TOKEN; Prometheus reads the same value from its secret file.
    expect(api.environment!.ADMIN_TOKEN).toMatch(/^\$\{ADMIN_TOKEN:\?/);
    expect(job.authorization.type).toBe('Bearer');
    const secret = path.posix.basename(job.authorization.credentials_file);
    expect(job.authorization.credentials_file).toBe(`/run/secrets/${secret}`);
    expect(compose.services.prometheus!.secrets).toContain(secret);
    expect(compose.secrets[secret]).toEqual({ environment: 'ADMIN_TOKEN' });
    expect(compose.services.prometheus!.volumes).toContain('./prometheus/prometheus.yml:/etc/prometheus/prometheus.yml:ro');
  });

  it('provisions the data source and the dashboards where Grafana finds them', () => {
    const datasources = parseYaml(read('grafana/provisioning/datasources/prometheus.yml')) as { datasources: Array<{ uid: string; url: string }> };
    const providers = parseYaml(read('grafana/provisioning/dashboards/booktape.yml')) as { providers: Array<{ options: { path: string } }> };
    const mounts = compose.services.grafana!.volumes!;
    expect(mounts).toContain(`./grafana/dashboards:${providers.providers[0]!.options.path}:ro`);
    expect(mounts).toContain('./grafana/provisioning/datasources:/etc/grafana/provisioning/datasources:ro');
    expect(mounts).toContain('./grafana/provisioning/dashboards:/etc/grafana/provisioning/dashboards:ro');
    expect(datasources.datasources[0]!.url).toBe('http://prometheus:9090');
    expect(readdirSync(path.join(COMPOSE_DIR, 'grafana/dashboards'))).toContain('booktape.json');

    const uid = datasources.datasources[0]!.uid;
    const ids = dashboard.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const p of dashboard.panels.filter((x) => x.type !== 'row')) {
      expect(p.datasource?.uid, p.title).toBe(uid);
      expect(p.targets?.length, p.title).toBeGreaterThan(0);
      for (const t of p.targets ?? []) expect(t.datasource.uid, p.title).toBe(uid);
    }
  });

  it('queries only metrics the API serves', async () => {
    const served = await apiMetricNames();
    // The scan found the API's metrics (a broken scan must not pass by finding nothing).
    for (const n of ['booktape_status', 'booktape_http_requests_total', 'booktape_http_request_duration_seconds_bucket', 'process_resident_memory_bytes']) expect(served).toContain(n);
    const queried = new Set(dashboard.panels.flatMap((p) => p.targets ?? []).flatMap((t) => metricNames(t.expr)));
    expect(queried.size).toBeGreaterThan(20);
    // `up` is Prometheus's own series for every target.
    expect([...queried].filter((n) => n !== 'up' && !served.has(n)).sort()).toEqual([]);
  });
});

/**
 * Names on the API's /metrics: the `booktape_*` metrics declared in apps/api/src (a
 * histogram also as its _bucket, _sum and _count series), and prom-client's default process
 * metrics, which the API registers. Other apps' metrics (the rollup worker's cross-check
 * counters) are on the API's /metrics only when they share its process (`npm start`), never
 * in this deployment.
 */
async function apiMetricNames(): Promise<Set<string>> {
  const names = new Set<string>();
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(dir, e.name)) : e.name.endsWith('.ts') && !e.name.includes('.test') ? [path.join(dir, e.name)] : []));
  for (const file of walk(path.join(REPO_ROOT, 'apps/api/src'))) {
    const src = readFileSync(file, 'utf8');
    for (const m of src.matchAll(/(?:name:\s*|gauge\(\s*)'(booktape_[a-z0-9_]+)'/g)) names.add(m[1]!);
    for (const m of src.matchAll(/new Histogram\(\{[^}]*?name:\s*'(booktape_[a-z0-9_]+)'/gs)) for (const s of ['_bucket', '_sum', '_count']) names.add(m[1]! + s);
  }
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  for (const m of await registry.getMetricsAsJSON()) {
    names.add(m.name);
    if (String(m.type) === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(m.name + s);
  }
  return names;
}

const PROMQL_WORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'inf', 'nan']);

/** The metric names a PromQL expression reads (not functions, aggregations or label names). */
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, '')
    .replace(/\[[^\]]*\]/g, '')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '');
  return [...bare.matchAll(/([A-Za-z_:][A-Za-z0-9_:]*)(\s*\()?/g)].filter((m) => !m[2] && !PROMQL_WORDS.has(m[1]!.toLowerCase())).map((m) => m[1]!);
}

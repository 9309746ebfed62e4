/**
 * The cluster variant of a migration, derived from its single-node statements, so that each
 * migration has one source. Statements are templates (`{db}`, `{cluster}` not substituted
 * yet, comments removed); `{shard}`, `{replica}` and `{uuid}` are the server's macros.
 *
 * On a cluster the rows of a table live in a replicated `<name>_local` table on every shard,
 * and a Distributed table (the "front" table) answers under `<name>`, the name the code
 * queries. The rules:
 *
 * - CREATE TABLE makes the local table ON CLUSTER with the Replicated engine (ZooKeeper path
 *   `/clickhouse/tables/{shard}/{db}/<name>_local`), then the front table. Rows are sharded
 *   by the first sorting-key column that is not LowCardinality: every version of a row has
 *   the same sorting key, so the versions meet on one shard, where ReplacingMergeTree and
 *   FINAL collapse them; a high-cardinality column spreads the rows over the shards.
 *   `non_replicated_deduplication_window` goes: replicated tables deduplicate a retried
 *   insert by themselves. A Merge table reads the local tables of its own shard; its front
 *   table has no sharding key, because it is only read.
 * - A staging table (created by the migration and later renamed into place) is replicated
 *   under the path of the table it replaces plus `{uuid}`, so that a re-run after a crash
 *   cannot collide with the staging table already renamed into place. Inserts into it are
 *   synchronous: no row may still be in flight when it is swapped in and its front table
 *   is dropped.
 * - RENAME moves the local table; the front table keeps its name. When a staging table is
 *   renamed into place, the front table (created from the old local table) gets the new
 *   MATERIALIZED expressions, and the staging front table is dropped; a staging table of a
 *   new column layout (it has ALIAS columns, as the typed raw tables of 012) gets a new front
 *   table made from it instead, since no ALTER turns the old front table into it. A table renamed out
 *   of the way ("retired") has no front table: dropping it drops the local table only.
 * - DROP TABLE drops the front table and then the local one. DROP VIEW waits (SYNC) until
 *   the view is gone on every host.
 * - A materialized view hangs on the local tables and writes into a local table: an insert
 *   through a front table lands in one shard's local table and fires the view there.
 * - ALTER of a column applies to the local and to the front table (which stores nothing,
 *   so it gets no CODEC); ALTER of an index applies to the local table only.
 * - INSERT … SELECT reads and writes through the front tables, unchanged.
 *
 * Any other statement throws: a new kind of statement needs a rule here.
 */
export function clusterStatements(statements: readonly string[]): string[] {
  const plan = planRenames(statements);
  const columns = new Map<string, Column[]>();
  return statements.flatMap((s) => deriveStatement(s, plan, columns));
}

interface RenamePlan {
  /** Staging table → the table it is renamed into. */
  staging: Map<string, string>;
  /** Names a table is renamed to when it is moved out of the way. */
  retired: Set<string>;
  /** The sharding key of each table created by the migration (its front table's). */
  shardKeys: Map<string, string>;
}

interface Column {
  name: string;
  /** Everything after the name: type, default or MATERIALIZED expression, CODEC. */
  definition: string;
}

const ON_CLUSTER = 'ON CLUSTER {cluster}';
const CREATE_TABLE = /^CREATE TABLE IF NOT EXISTS \{db\}\.(\w+)(?: AS \{db\}\.(\w+))?/;
const CREATE_VIEW = /^CREATE MATERIALIZED VIEW IF NOT EXISTS \{db\}\.(\w+) TO \{db\}\.(\w+) AS\b([\s\S]*)$/;
const DROP = /^DROP (TABLE|VIEW) IF EXISTS \{db\}\.(\w+)( SYNC)?$/;
const RENAME = /^RENAME TABLE (IF EXISTS )?\{db\}\.(\w+) TO \{db\}\.(\w+)$/;
const ALTER = /^ALTER TABLE \{db\}\.(\w+) ((?:ADD|MODIFY|DROP) (COLUMN|INDEX) [\s\S]*)$/;
const INSERT = /^INSERT INTO \{db\}\.(\w+)\b/;

function planRenames(statements: readonly string[]): RenamePlan {
  const created = new Set(statements.flatMap((s) => CREATE_TABLE.exec(s)?.[1] ?? []));
  const plan: RenamePlan = { staging: new Map(), retired: new Set(), shardKeys: new Map() };
  for (const s of statements) {
    const m = RENAME.exec(s);
    if (!m) continue;
    if (created.has(m[2]!)) plan.staging.set(m[2]!, m[3]!);
    else plan.retired.add(m[3]!);
  }
  return plan;
}

function deriveStatement(s: string, plan: RenamePlan, columns: Map<string, Column[]>): string[] {
  let m: RegExpExecArray | null;
  if ((m = CREATE_TABLE.exec(s))) return createTable(s, m, plan, columns);
  if ((m = CREATE_VIEW.exec(s))) {
    const [view, target, select] = [m[1]!, m[2]!, m[3]!];
    if (/\bJOIN\b/i.test(select)) throw noRule(s, 'a view with a JOIN');
    const local = select.replace(/\bFROM \{db\}\.(\w+)/g, 'FROM {db}.$1_local');
    return [`CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.${view} ${ON_CLUSTER} TO {db}.${target}_local AS${local}`];
  }
  if ((m = DROP.exec(s))) {
    const [kind, name, sync] = [m[1]!, m[2]!, m[3] ?? ''];
    if (kind === 'VIEW') return [`DROP VIEW IF EXISTS {db}.${name} ${ON_CLUSTER} SYNC`];
    const local = `DROP TABLE IF EXISTS {db}.${name}_local ${ON_CLUSTER}${sync}`;
    return plan.retired.has(name) ? [local] : [`DROP TABLE IF EXISTS {db}.${name} ${ON_CLUSTER}${sync}`, local];
  }
  if ((m = RENAME.exec(s))) {
    const [ifExists, from, to] = [m[1] ?? '', m[2]!, m[3]!];
    const out = [`RENAME TABLE ${ifExists}{db}.${from}_local TO {db}.${to}_local ${ON_CLUSTER}`];
    if (plan.staging.has(from)) {
      const own = columns.get(from) ?? [];
      if (own.some((c) => /\bALIAS\b/.test(c.definition))) {
        // A new column layout (ALIAS columns: the typed raw tables of 012): the front table,
        // made from the old local table, cannot be altered into it; it is made again.
        const key = plan.shardKeys.get(from);
        out.push(`DROP TABLE IF EXISTS {db}.${to} ${ON_CLUSTER} SYNC`);
        out.push(`CREATE TABLE IF NOT EXISTS {db}.${to} ${ON_CLUSTER} AS {db}.${to}_local\nENGINE = Distributed({cluster}, {db}, ${to}_local${key === undefined ? '' : `, ${key}`})`);
      } else {
        for (const c of own) {
          if (/\bMATERIALIZED\b/.test(c.definition)) out.push(`ALTER TABLE {db}.${to} ${ON_CLUSTER} MODIFY COLUMN ${c.name} ${withoutCodec(c.definition)}`);
        }
      }
      out.push(`DROP TABLE IF EXISTS {db}.${from} ${ON_CLUSTER}`);
    }
    return out;
  }
  if ((m = ALTER.exec(s))) {
    const [table, action, kind] = [m[1]!, m[2]!, m[3]!];
    if (splitTopLevel(action).length > 1) throw noRule(s, 'an ALTER with several actions');
    const local = `ALTER TABLE {db}.${table}_local ${ON_CLUSTER} ${action}`;
    return kind === 'INDEX' ? [local] : [local, `ALTER TABLE {db}.${table} ${ON_CLUSTER} ${withoutCodec(action)}`];
  }
  if ((m = INSERT.exec(s))) {
    if (!plan.staging.has(m[1]!)) return [s];
    const select = s.search(/\bSELECT\b/);
    if (select < 0) throw noRule(s, 'an INSERT into a staging table without SELECT');
    return [`${s.slice(0, select)}SETTINGS insert_distributed_sync = 1\n${s.slice(select)}`];
  }
  throw noRule(s, 'this kind of statement');
}

function createTable(s: string, m: RegExpExecArray, plan: RenamePlan, columns: Map<string, Column[]>): string[] {
  const [header, name, like] = [m[0], m[1]!, m[2]];
  const rest = s.slice(header.length);
  let own: Column[] | undefined;
  let bodyEnd = 0;
  if (like === undefined) {
    const open = rest.indexOf('(');
    if (open < 0 || rest.slice(0, open).trim() !== '') throw noRule(s, 'a table without a column list');
    bodyEnd = closingParen(rest, open) + 1;
    own = parseColumns(rest.slice(open + 1, bodyEnd - 1));
  } else {
    own = columns.get(like);
  }
  if (own) columns.set(name, own);

  const engineAt = /^\s*ENGINE = /.test(rest.slice(bodyEnd)) ? rest.indexOf('ENGINE = ', bodyEnd) : -1;
  if (engineAt < 0) throw noRule(s, 'a table without ENGINE right after its columns');
  const engine = parseEngine(rest, engineAt + 'ENGINE = '.length);
  const clauses = withoutDedupWindow(rest.slice(engine.end));
  const localName = `${name}_local`;
  let localEngine: string;
  let shardKey: string | undefined;
  if (/MergeTree$/.test(engine.name) && !engine.name.startsWith('Replicated')) {
    const replaced = plan.staging.get(name);
    const path = `/clickhouse/tables/{shard}/{db}/${replaced === undefined ? localName : `${replaced}_local/{uuid}`}`;
    localEngine = `Replicated${engine.name}('${path}', '{replica}'${engine.args === undefined ? '' : `, ${engine.args}`})`;
    shardKey = `cityHash64(${shardColumn(s, clauses, own)})`;
    plan.shardKeys.set(name, shardKey);
  } else if (engine.name === 'Merge' && engine.args !== undefined) {
    localEngine = `Merge(${localMergeArgs(s, engine.args)})`;
  } else {
    throw noRule(s, `the ${engine.name} engine`);
  }
  const localHeader = `CREATE TABLE IF NOT EXISTS {db}.${localName} ${ON_CLUSTER}${like === undefined ? '' : ` AS {db}.${like}_local`}`;
  const local = `${localHeader}${rest.slice(0, engineAt)}ENGINE = ${localEngine}${clauses}`;
  const front =
    `CREATE TABLE IF NOT EXISTS {db}.${name} ${ON_CLUSTER} AS {db}.${localName}\n` +
    `ENGINE = Distributed({cluster}, {db}, ${localName}${shardKey === undefined ? '' : `, ${shardKey}`})`;
  return [local, front];
}

function shardColumn(s: string, clauses: string, own: Column[] | undefined): string {
  if (!own) throw noRule(s, 'a MergeTree table whose columns are not known');
  const at = clauses.search(/\bORDER BY /);
  if (at < 0) throw noRule(s, 'a MergeTree table without ORDER BY');
  let key = clauses.slice(at + 'ORDER BY '.length);
  key = key.startsWith('(') ? key.slice(1, closingParen(key, 0)) : /^\S+/.exec(key)![0];
  const types = new Map(own.map((c) => [c.name, c.definition]));
  const column = splitTopLevel(key)
    .map((k) => k.trim())
    .find((k) => types.has(k) && !types.get(k)!.startsWith('LowCardinality('));
  if (column === undefined) throw noRule(s, 'a sorting key without a high-cardinality column to shard by');
  return column;
}

/** The Merge table's regular expression names local tables: `…$` becomes `…_local$`. */
function localMergeArgs(s: string, args: string): string {
  const parts = splitTopLevel(args);
  const pattern = parts[1]?.trim();
  if (parts.length !== 2 || !pattern?.endsWith("$'")) throw noRule(s, "a Merge table whose pattern does not end with $'");
  return `${parts[0]!.trim()}, ${pattern.slice(0, -2)}_local$'`;
}

function parseEngine(text: string, at: number): { name: string; args: string | undefined; end: number } {
  const name = /^\w+/.exec(text.slice(at))?.[0] ?? '';
  const after = at + name.length;
  if (text[after] !== '(') return { name, args: undefined, end: after };
  const close = closingParen(text, after);
  return { name, args: text.slice(after + 1, close), end: close + 1 };
}

function parseColumns(list: string): Column[] {
  return splitTopLevel(list)
    .map((c) => c.trim())
    .filter((c) => !/^(INDEX|PROJECTION|CONSTRAINT)\b/.test(c))
    .map((c) => {
      const [, name, definition] = /^(\w+)\s+([\s\S]*)$/.exec(c) ?? [];
      if (name === undefined || definition === undefined) throw new Error(`cluster DDL: cannot read the column "${c}"`);
      return { name, definition: definition.replace(/\s+/g, ' ') };
    });
}

/** Replicated tables deduplicate retried inserts themselves; other settings stay. */
function withoutDedupWindow(clauses: string): string {
  const m = /(\s*)SETTINGS ([\s\S]*)$/.exec(clauses);
  if (!m) return clauses;
  const kept = splitTopLevel(m[2]!)
    .map((x) => x.trim())
    .filter((x) => !x.startsWith('non_replicated_deduplication_window'));
  return clauses.slice(0, m.index) + (kept.length > 0 ? `${m[1]}SETTINGS ${kept.join(', ')}` : '');
}

function withoutCodec(definition: string): string {
  const at = definition.search(/\s*\bCODEC\(/);
  if (at < 0) return definition;
  const open = definition.indexOf('(', at);
  return definition.slice(0, at) + definition.slice(closingParen(definition, open) + 1);
}

/** Index of the parenthesis closing the one at `open`; quoted text is skipped. */
function closingParen(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const ch = text[i];
    if (ch === "'") i = quoteEnd(text, i);
    else if (ch === '(') depth++;
    else if (ch === ')' && --depth === 0) return i;
  }
  throw new Error(`cluster DDL: unbalanced parentheses in "${text}"`);
}

/** Splits at the commas outside parentheses and quotes. */
function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (ch === "'") i = quoteEnd(text, i);
    else if (ch === '(') depth++;
    else if (ch === ')') depth--;
    else if (ch === ',' && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts;
}

/** Index of the quote closing the string literal that opens at `open`. */
function quoteEnd(text: string, open: number): number {
  for (let i = open + 1; i < text.length; i++) {
    if (text[i] === '\\') i++;
    else if (text[i] === "'") return i;
  }
  throw new Error(`cluster DDL: unterminated string in "${text}"`);
}

function noRule(statement: string, what: string): Error {
  return new Error(`cluster DDL: no rule derives the cluster variant of ${what}: ${statement.split('\n')[0]}`);
}

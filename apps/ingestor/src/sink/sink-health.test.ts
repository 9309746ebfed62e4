import { describe, expect, it } from 'vitest';
import { sinkHealth, type ConsumerState, type ConsumerView, type SinkStats } from './sink.ts';

const view = (state: ConsumerState, o: Partial<ConsumerView> = {}): ConsumerView => ({ state, lastError: null, groupId: 'g', joiningForMs: 0, joinGraceMs: 90_000, ...o });
const stats = (o: Partial<SinkStats> = {}): SinkStats => ({ batches: 1, inserts: 1, stored: 10, deadLettered: 0, refusedRecords: 0, insertFailures: 0, paused: false, lastStoredAt: 1, notifyFailures: 0, notifyDropped: 0, crashes: 0, ...o });

describe('sinkHealth', () => {
  it('ok only while the consumer runs or joins and ClickHouse accepts inserts', () => {
    const states: ConsumerState[] = ['joining', 'running', 'restarting', 'stopped'];
    for (const consumer of states) {
      for (const paused of [false, true]) {
        const h = sinkHealth(stats({ paused }), view(consumer, { lastError: 'boom' }), 0);
        expect(h.ok).toBe((consumer === 'running' || consumer === 'joining') && !paused);
        // Every state that is not plainly running gives a reason.
        expect(h.reason === null).toBe(consumer === 'running' && !paused);
        expect(h.consumer).toBe(consumer);
      }
    }
  });

  it('a crash is named with its error; a failing notification does not make the sink unhealthy', () => {
    const down = sinkHealth(stats({ crashes: 2 }), view('restarting', { lastError: 'The group is rebalancing' }), 0);
    expect(down).toMatchObject({ ok: false, consumer: 'restarting', crashes: 2 });
    expect(down.reason).toContain('The group is rebalancing');
    expect(sinkHealth(stats({ notifyFailures: 40 }), view('running'), 1200)).toMatchObject({ ok: true, reason: null, notifyPending: 1200 });
  });

  it('joining is ok for as long as a session timeout explains, then not', () => {
    expect(sinkHealth(stats(), view('joining', { joiningForMs: 89_000 }), 0)).toMatchObject({ ok: true, consumer: 'joining' });
    const stuck = sinkHealth(stats(), view('joining', { joiningForMs: 91_000, lastError: 'Connection error: ECONNREFUSED' }), 0);
    expect(stuck.ok).toBe(false);
    expect(stuck.reason).toContain('ECONNREFUSED');
  });
});

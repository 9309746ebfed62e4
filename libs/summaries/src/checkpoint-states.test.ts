import { describe, expect, it } from 'vitest';
import { CheckpointStates } from './checkpoint-states.ts';

describe('CheckpointStates', () => {
  it('keeps states up to its size in characters, the least recently used first out', () => {
    const states = new CheckpointStates(10);
    states.set('a', 'aaaa');
    states.set('b', 'bbbb');
    // Reading `a` makes `b` the least recently used.
    expect(states.get('a')).toBe('aaaa');
    states.set('c', 'cccc');
    expect(states.get('b')).toBeUndefined();
    expect(states.get('a')).toBe('aaaa');
    expect(states.get('c')).toBe('cccc');
  });

  it('counts a state set again once, and never keeps one larger than the whole', () => {
    const states = new CheckpointStates(10);
    states.set('a', 'aaaa');
    states.set('a', 'aaaaa');
    states.set('b', 'bbbbb');
    expect([states.get('a'), states.get('b')]).toEqual(['aaaaa', 'bbbbb']);
    states.set('big', 'x'.repeat(11));
    expect(states.get('big')).toBeUndefined();
    expect([states.get('a'), states.get('b')]).toEqual(['aaaaa', 'bbbbb']);
  });
});

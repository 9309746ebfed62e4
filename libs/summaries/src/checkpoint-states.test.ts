import { describe, expect, it } from 'vitest';
import { CheckpointStates } from './checkpoint-states.ts';

describe('CheckpointStates', () => {
  it('keeps states up to its size in characters, the least recently used first out', () => {
    // Five characters an entry, its name counted: two fit.
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

  it('counts a state set again once, names with states, and never keeps one larger than the whole', () => {
    // Each entry below is a one-character name and a five-character state: 12 is two of them.
    const states = new CheckpointStates(12);
    states.set('a', 'aaaa');
    states.set('a', 'aaaaa');
    states.set('b', 'bbbbb');
    expect([states.get('a'), states.get('b')]).toEqual(['aaaaa', 'bbbbb']);
    // Ten characters of state fit alone; with its name they do not.
    states.set('big', 'x'.repeat(10));
    expect(states.get('big')).toBeUndefined();
    expect([states.get('a'), states.get('b')]).toEqual(['aaaaa', 'bbbbb']);
  });
});

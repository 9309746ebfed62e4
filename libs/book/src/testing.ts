/**
 * Test support for other packages (`@booktape/book/testing`): reference implementations and
 * stream generators that tests elsewhere check their results against. Never imported by
 * non-test code; it pulls in fast-check.
 */
export * from './reference.test-support.ts';
export * from './streams.test-support.ts';
export * from './checks-reference.test-support.ts';
export * from './replay-compare.test-support.ts';

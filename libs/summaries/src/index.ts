export * from './fold.ts';
export * from './roller.ts';
export * from './summary-plan.ts';
export * from './summary-reader.ts';
export * from './book-at.ts';

// Runs the ingestor alone (production shape); `npx booktape ingest` does the same.
import { runIngest } from './run.ts';

process.exitCode = await runIngest();

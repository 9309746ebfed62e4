import type { CaptureGap } from '@booktape/domain';
import type { CaptureLogger, CapturedFrame, FeedState } from './feed.base.ts';

/** Test helpers: a logger that records, and callbacks that collect what a feed emits. */

export interface LogLine {
  level: 'debug' | 'info' | 'warn' | 'error';
  obj: object;
  msg: string | undefined;
}

export function recordingLogger(): CaptureLogger & { lines: LogLine[] } {
  const lines: LogLine[] = [];
  const at =
    (level: LogLine['level']) =>
    (obj: object, msg?: string): void => {
      lines.push({ level, obj, msg });
    };
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

export function collector(): {
  frames: CapturedFrame[];
  gaps: CaptureGap[];
  states: FeedState[];
  onFrame: (f: CapturedFrame) => void;
  onGap: (g: CaptureGap) => void;
  onState: (s: FeedState) => void;
} {
  const frames: CapturedFrame[] = [];
  const gaps: CaptureGap[] = [];
  const states: FeedState[] = [];
  return {
    frames,
    gaps,
    states,
    onFrame: (f) => frames.push(f),
    onGap: (g) => gaps.push(g),
    onState: (s) => states.push(s),
  };
}

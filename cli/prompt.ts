/**
 * Reading from the person at the terminal (or from a pipe, for scripts): a
 * secret without echo, and a confirmation line. Prompts go to stderr so that
 * stdout stays the command's output.
 */

import { createInterface } from 'node:readline';

/** One line from stdin (the prompt on stderr); undefined when stdin ends first. */
export function readLine(prompt: string, input: NodeJS.ReadStream = process.stdin): Promise<string | undefined> {
  process.stderr.write(prompt);
  return new Promise((resolve) => {
    const rl = createInterface({ input, terminal: false });
    let answered = false;
    rl.once('line', (line) => {
      answered = true;
      rl.close();
      resolve(line);
    });
    rl.once('close', () => {
      if (!answered) resolve(undefined);
    });
  });
}

/**
 * A secret: typed at a terminal without echo, or the whole of stdin when it
 * is a pipe (`leasehold login --url … < token-file`). Trimmed.
 */
export async function readSecret(prompt: string, input: NodeJS.ReadStream = process.stdin): Promise<string> {
  if (!input.isTTY) {
    const chunks: Buffer[] = [];
    for await (const chunk of input) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
    return Buffer.concat(chunks).toString('utf8').trim();
  }
  process.stderr.write(prompt);
  input.setRawMode(true);
  input.resume();
  input.setEncoding('utf8');
  return new Promise((resolve, reject) => {
    let secret = '';
    const done = (error?: Error): void => {
      input.setRawMode(false);
      input.pause();
      input.off('data', onData);
      process.stderr.write('\n');
      if (error) reject(error);
      else resolve(secret.trim());
    };
    const onData = (chunk: string): void => {
      for (const ch of chunk) {
        if (ch === '\r' || ch === '\n' || ch === '\u0004') return done();
        if (ch === '\u0003') return done(new Error('interrupted'));
        if (ch === '\u007f' || ch === '\b') secret = secret.slice(0, -1);
        else secret += ch;
      }
    };
    input.on('data', onData);
  });
}

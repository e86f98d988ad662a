/**
 * Where the command line finds its server and token: `--url` and
 * `--token-file` first, then LEASEHOLD_URL and LEASEHOLD_TOKEN, then the file
 * `leasehold login` wrote ($XDG_CONFIG_HOME/leasehold/config.json, mode 0600).
 * A token never comes from an argument: arguments show in `ps` and in shell
 * history.
 */

import { chmodSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { LeaseholdClient } from '../lib/client/index';
import { CliError, EXIT } from './errors';
import type { Env } from './format';

export type { Env };

export interface SavedConfig {
  url: string;
  token: string;
}

export interface ConnectionOptions {
  url?: string | undefined;
  tokenFile?: string | undefined;
}

export function configPath(env: Env = process.env): string {
  const base = env.XDG_CONFIG_HOME && env.XDG_CONFIG_HOME !== '' ? env.XDG_CONFIG_HOME : join(homedir(), '.config');
  return join(base, 'leasehold', 'config.json');
}

export function readConfig(env: Env = process.env): Partial<SavedConfig> {
  let text: string;
  try {
    text = readFileSync(configPath(env), 'utf8');
  } catch {
    return {};
  }
  try {
    const parsed = JSON.parse(text) as Partial<SavedConfig>;
    return { url: typeof parsed.url === 'string' ? parsed.url : undefined, token: typeof parsed.token === 'string' ? parsed.token : undefined } as Partial<SavedConfig>;
  } catch {
    throw new CliError(`${configPath(env)} is not valid JSON: run leasehold login again, or leasehold logout`);
  }
}

/** Writes the config with mode 0600 (its folder 0700): it holds a bearer token. */
export function writeConfig(config: SavedConfig, env: Env = process.env): string {
  const file = configPath(env);
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  chmodSync(dirname(file), 0o700); // mkdir leaves an existing folder's mode as it was
  writeFileSync(file, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  chmodSync(file, 0o600); // an existing file keeps its old mode otherwise
  return file;
}

/** Deletes the saved config; true if there was one. */
export function deleteConfig(env: Env = process.env): boolean {
  const file = configPath(env);
  try {
    readFileSync(file);
  } catch {
    return false;
  }
  rmSync(file, { force: true });
  return true;
}

export function readTokenFile(path: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new CliError(`cannot read the token file ${path}: ${(e as Error).message}`, EXIT.usage);
  }
  const token = text.trim();
  if (token === '') throw new CliError(`the token file ${path} is empty`, EXIT.usage);
  return token;
}

/** The server and token to use, by the precedence above. */
export function resolveConnection(opts: ConnectionOptions, env: Env = process.env): { url: string; token: string | undefined } {
  const saved = opts.url !== undefined && opts.tokenFile !== undefined ? {} : readConfig(env);
  const url = opts.url ?? nonEmpty(env.LEASEHOLD_URL) ?? saved.url;
  if (url === undefined) throw new CliError('no server: pass --url, set LEASEHOLD_URL, or run `leasehold login --url URL`', EXIT.usage);
  const token = opts.tokenFile !== undefined ? readTokenFile(opts.tokenFile) : (nonEmpty(env.LEASEHOLD_TOKEN)?.trim() ?? saved.token);
  return { url, token };
}

function nonEmpty(s: string | undefined): string | undefined {
  return s === undefined || s === '' ? undefined : s;
}

/** A client for the resolved connection (the SDK's: the command line has no HTTP client of its own). */
export function connect(opts: ConnectionOptions): LeaseholdClient {
  const { url, token } = resolveConnection(opts);
  return new LeaseholdClient({ baseUrl: url, token });
}

/** Entry of the `leasehold` command (built to dist/cli.mjs and the SDK package's bin). */

import { main } from './program';

// `leasehold audit --follow --json | head -3`: a reader that goes away ends the command quietly.
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code === 'EPIPE') process.exit(0);
  throw e;
});

const code = await main(process.argv);
// Output to a pipe is asynchronous: let it drain, then end even if a timer or socket lingers.
process.stdout.write('', () => process.exit(code));

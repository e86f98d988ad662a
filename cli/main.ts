/** Entry of the `leasehold` command (built to dist/cli.mjs and the SDK package's bin). */

import { main } from './program';

const code = await main(process.argv);
// Output to a pipe is asynchronous: let it drain, then end even if a timer or socket lingers.
process.stdout.write('', () => process.exit(code));

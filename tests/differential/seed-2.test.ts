// The differential test, seed 2 of CI's five (see workload.ts).
import { differentialTest } from './workload';

differentialTest(22);

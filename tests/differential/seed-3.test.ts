// The differential test, seed 3 of CI's five (see workload.ts).
import { differentialTest } from './workload';

differentialTest(33);

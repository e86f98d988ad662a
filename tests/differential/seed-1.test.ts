// The differential test, seed 1 of CI's five (see workload.ts).
import { differentialTest } from './workload';

differentialTest(11);

// The differential test, seed 5 of CI's five (see workload.ts).
import { differentialTest } from './workload';

differentialTest(55);

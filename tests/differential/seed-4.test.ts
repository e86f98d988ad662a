// The differential test, seed 4 of CI's five (see workload.ts).
import { differentialTest } from './workload';

differentialTest(44);

// The clock port: epoch milliseconds. reconcile() reads it once per reconcile (and for the Events it records);
// the process passes Date.now, the simulator its world's time.

export type Clock = () => number;

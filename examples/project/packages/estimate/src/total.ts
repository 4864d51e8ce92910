export const total = (xs: number[]) => Math.max(0, xs.reduce((a, b) => a + b, 0));

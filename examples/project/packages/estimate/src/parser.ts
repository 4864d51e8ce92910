export function parse(text: string): number[] {
  return text.split(",").filter(Boolean).map(Number);
}

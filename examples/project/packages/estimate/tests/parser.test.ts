import { parse } from "../src/parser";
test("parse", () => expect(parse("1,2")).toEqual([1, 2]));

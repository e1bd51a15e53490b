// The dedupe fingerprint is hashed while walking the event; it must be
// exactly the hash of the event's canonical text (what it was before).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { canonical, fingerprint, hash } from '../../ui/js/projection.js';

// The reference: cyrb53 of the canonical text, written out here.
function cyrb53(text) {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}
const reference = (value) => cyrb53(canonical(value));

function same(text) {
  const value = JSON.parse(text);
  assert.equal(fingerprint(value), reference(value), `fingerprint of ${text}`);
}

test('the hash is cyrb53', () => {
  for (const s of ['', 'a', '{"a":1}', '\ud800', 'é🚀']) assert.equal(hash(s), cyrb53(s));
  assert.equal(hash(''), 3338908027751811);
});

test('the fingerprint is the hash of the canonical text, on odd inputs', () => {
  const cases = [
    'null',
    'true',
    'false',
    '0',
    '-0',
    '1.0',
    '1e21',
    '1e-7',
    '123456789012345678901234567890',
    '9007199254740993',
    '5e-324',
    '1.7976931348623157e308',
    '-1.5E+3',
    '0.1',
    '""',
    '"plain"',
    '"\\"quoted\\" and \\\\ back\\/slash"',
    '"\\u0000\\u0001\\u0007\\b\\t\\n\\u000b\\f\\r\\u000e\\u001f\\u0020"',
    '"\\u007f\\u0080\\u00ff\\u2028\\u2029\\ufeff\\uffff"',
    '"\\ud800"',
    '"\\udfff"',
    '"x\\ud800"',
    '"\\udc00x"',
    '"\\ud83d\\ude80"',
    '"\\ude80\\ud83d"',
    '"\\ud83d\\ud83d\\ude80"',
    '"\\ud83d\\ude80\\ude80"',
    '"a\\ud800b\\udbffc\\udc00d"',
    '"café 数据 ошибка 🚀 e\\u0301"',
    '[]',
    '{}',
    '[[]]',
    '[{}]',
    '[1,[2,[3,[4,{"a":[5,{"b":null}]}]]]]',
    '[null,true,false,0,-0,"",[],{}]',
    '{"b":1,"a":2}',
    '{"a":2,"b":1}',
    '{"10":1,"2":2,"a":3,"1":4,"-1":5,"01":6}',
    '{"__proto__":{"x":1},"constructor":2,"toString":3}',
    '{"":1,"\\u0000":2,"\\"":3,"\\\\":4,"\\ud800":5,"é":6,"e\\u0301":7,"🚀":8,"Z":9,"a":10}',
    '{"z":{"y":{"x":[{"w":"\\n","v":-0,"u":1e21}]}},"a":[{"c":1,"b":2}]}',
    '{"aep":"0.1","id":"e1","type":"tool.requested","time":"2026-12-01T10:00:00Z","source":"urn:agent:a","agent":"a","session":"s","run":"r","seq":3,"capture":"full","data":{"tool":{"name":"Bash","call_id":"c1","input":{"command":"echo \\"hi\\"\\n"}}}}',
  ];
  for (const text of cases) same(text);
});

test('members in any order give the same fingerprint', () => {
  const e = JSON.parse('{"aep":"0.1","id":"e1","type":"x","data":{"b":[1,{"d":2,"c":3}],"a":"\\ud800"}}');
  const reversed = (v) =>
    Array.isArray(v) ? v.map(reversed) : v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).reverse().map(([k, x]) => [k, reversed(x)])) : v;
  assert.equal(fingerprint(reversed(e)), fingerprint(e));
  assert.equal(fingerprint(e), reference(e));
  assert.notEqual(fingerprint(e), fingerprint({ ...e, id: 'e2' }));
});

test('the fingerprint is the hash of the canonical text, on random values', () => {
  let seed = 7;
  const rand = (n) => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return Math.floor((seed / 4294967296) * n);
  };
  // Code units JSON treats specially, and some it does not.
  const units = [0, 1, 8, 9, 10, 12, 13, 31, 32, 34, 47, 92, 97, 122, 127, 0xe9, 0x2028, 0xd7ff, 0xd800, 0xdbff, 0xdc00, 0xdfff, 0xe000, 0xfeff, 0xffff];
  const string = () => {
    let s = '';
    for (let n = rand(8); n > 0; n -= 1) s += String.fromCharCode(rand(4) ? units[rand(units.length)] : rand(0x10000));
    return s;
  };
  const numbers = [0, -0, 1, -1, 0.5, 1e21, 1e-7, 2 ** 53 + 2, -1.5e300, 123.456];
  const value = (depth) => {
    const r = rand(depth > 3 ? 4 : 6);
    if (r === 0) return [null, true, false][rand(3)];
    if (r === 1) return numbers[rand(numbers.length)];
    if (r === 2 || r === 3) return string();
    if (r === 4) return Array.from({ length: rand(4) }, () => value(depth + 1));
    const o = {};
    for (let n = rand(5); n > 0; n -= 1) o[string()] = value(depth + 1);
    return o;
  };
  for (let i = 0; i < 3000; i += 1) same(JSON.stringify(value(0)));
});

// Against the built-in target: `headroom target` serves it on 127.0.0.1:8080.
// A k6 script as a team would have it: `headroom run tasks-k6.js` runs it as it is.
import http from 'k6/http';
import { check, group, sleep } from 'k6';

const BASE_URL = __ENV.BASE_URL || 'http://127.0.0.1:8080';

export const options = {
  stages: [
    { duration: '10s', target: 10 },
    { duration: '20s', target: 10 },
  ],
  thresholds: {
    http_req_duration: ['p(95)<200'],
    'http_req_duration{name:read}': ['p(99)<100'],
    http_req_failed: ['rate<0.01'],
  },
};

export default function () {
  group('lifecycle', function () {
    const created = http.post(`${BASE_URL}/tasks`, JSON.stringify({ kind: 'k6', n: __ITER }), {
      headers: { 'Content-Type': 'application/json' },
      tags: { name: 'create' },
    });
    check(created, { 'created': (r) => r.status === 201 });
    const id = created.json('id');

    const read = http.get(`${BASE_URL}/tasks/${id}`, { tags: { name: 'read' } });
    check(read, { 'has a creation time': (r) => r.json('created_at') !== undefined });

    sleep(Math.random() * 0.8 + 0.2);

    http.del(`${BASE_URL}/tasks/${id}`, null, { tags: { name: 'delete' } });
  });
}

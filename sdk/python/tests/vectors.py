"""Deterministic fixture values of the MA2H v0.5 conformance vectors (the ``dp-*`` downstream
proofs), used as test data. Values only — keys, payloads, canonical bytes and expected signatures —
each block naming its source file in autnmy/ma2h-protocol (commit 7e84e71f38b2). Descriptive
prose (``description``/``obligation``/``reason``/``note``) is left out."""

# fmt: off
# source: autnmy/ma2h-protocol conformance/vectors/dp-*.json — the shared HMAC test key
TEST_KEY = "ma2h-test-secret-key-0123456789ab"

# source: autnmy/ma2h-protocol conformance/vectors/dp-001-signature.json
DP_001 = {'test_key': 'ma2h-test-secret-key-0123456789ab',
 'payload': {'response': {'value': 'hold',
                          'edited': False,
                          'actor': 'human:alice',
                          'resolved_at': '2026-06-04T15:48:30Z',
                          'comment': "Let's get a human eye on the migration first."},
             'state': {'sealed': 'v1.demo.MOCK-SEALED-STATE-BLOB'}},
 'signed_context': {'ma2h_version': '0.3',
                    'callback_url': 'https://deploybot.example/ma2h/resume',
                    'id': 'msg_01HZXASK0001',
                    'in_reply_to': 'msg_01HZXASK0001',
                    'jti': 'jti_01HZX7Q9Z3DEMOFIX',
                    'payload_sha256': '3073dec57c04075d0b6bfa17c300fa9600ad92fb13e485e410c8a95274ac47ed',
                    'resolution': 'answered',
                    'resolution_id': 'res_01HZXR3SOLVE',
                    'resolved_at': '2026-06-04T15:48:30Z',
                    't': '1749050910'},
 'canonical_jcs': '{"callback_url":"https://deploybot.example/ma2h/resume","id":"msg_01HZXASK0001","in_reply_to":"msg_01HZXASK0001","jti":"jti_01HZX7Q9Z3DEMOFIX","ma2h_version":"0.3","payload_sha256":"3073dec57c04075d0b6bfa17c300fa9600ad92fb13e485e410c8a95274ac47ed","resolution":"answered","resolution_id":"res_01HZXR3SOLVE","resolved_at":"2026-06-04T15:48:30Z","t":"1749050910"}',
 'header': 'MA2H-Signature: t=1749050910,jti=jti_01HZX7Q9Z3DEMOFIX,v1=Ryfm6kkeIKl80WEanB__dxoyL6bg5yFF33bRpu_3cxc',
 'v1': 'Ryfm6kkeIKl80WEanB__dxoyL6bg5yFF33bRpu_3cxc'}

# source: autnmy/ma2h-protocol conformance/vectors/dp-003-payload-tamper-invalid.json
DP_003 = {'signed_context': {'ma2h_version': '0.3',
                    'callback_url': 'https://deploybot.example/ma2h/resume',
                    'id': 'msg_01HZXASK0001',
                    'in_reply_to': 'msg_01HZXASK0001',
                    'jti': 'jti_01HZX7Q9Z3DEMOFIX',
                    'payload_sha256': '3073dec57c04075d0b6bfa17c300fa9600ad92fb13e485e410c8a95274ac47ed',
                    'resolution': 'answered',
                    'resolution_id': 'res_01HZXR3SOLVE',
                    'resolved_at': '2026-06-04T15:48:30Z',
                    't': '1749050910'},
 'v1': 'Ryfm6kkeIKl80WEanB__dxoyL6bg5yFF33bRpu_3cxc',
 'honest_payload': {'response': {'value': 'hold',
                                 'edited': False,
                                 'actor': 'human:alice',
                                 'resolved_at': '2026-06-04T15:48:30Z',
                                 'comment': "Let's get a human eye on the migration first."},
                    'state': {'sealed': 'v1.demo.MOCK-SEALED-STATE-BLOB'}},
 'tampered_payload': {'response': {'value': 'ship',
                                   'edited': False,
                                   'actor': 'human:alice',
                                   'resolved_at': '2026-06-04T15:48:30Z',
                                   'comment': "Let's get a human eye on the migration first."},
                      'state': {'sealed': 'v1.demo.MOCK-SEALED-STATE-BLOB'}}}

# source: autnmy/ma2h-protocol conformance/vectors/dp-004-numeric-payload.json
DP_004 = {'payload_canonical_jcs': '{"response":{"actor":"human:alice","edited":false,"resolved_at":"2026-06-12T00:00:00Z","value":{"amount":1234.5,"big":1e+21,"count":42,"items":[1,-2,3.5],"max_safe":9007199254740991,"ok":true,"ratio":-0.001,"tiny":1e-7}},"state":{"balance":-0.5,"nested":{"n":0},"seq":7}}',
 'payload_sha256': '56186e18d2371cee2a6636cdab7223ff52d64cfeb5bbcba01a0b4e91b7e51dca'}

# source: autnmy/ma2h-protocol conformance/vectors/dp-004-numeric-payload.json — `payload`, verbatim JSON text
DP004_PAYLOAD_JSON = '{\n    "response": {\n      "value": {\n        "amount": 1234.5,\n        "count": 42,\n        "ratio": -0.001,\n        "tiny": 1e-7,\n        "big": 1e21,\n        "max_safe": 9007199254740991,\n        "items": [1, -2, 3.5],\n        "ok": true\n      },\n      "edited": false,\n      "actor": "human:alice",\n      "resolved_at": "2026-06-12T00:00:00Z"\n    },\n    "state": { "seq": 7, "balance": -0.5, "nested": { "n": 0 } }\n  }'

# source: autnmy/ma2h-protocol conformance/vectors/dp-005-inbound-signature.json
DP_005 = {'directive': {'ma2h_version': '0.4',
               'type': 'directive',
               'id': 'dir_01HZXDIR0001',
               'from': 'human:alice',
               'to': 'agent:deploybot/dev-team',
               'created_at': '2026-06-30T12:00:00Z',
               'title': 'Pause deploys until the incident is resolved',
               'body': 'We are mid-incident on prod. Hold all deploys until I say otherwise.',
               'priority': 'urgent',
               'tags': ['incident', 'deploy-freeze']},
 'payload_canonical_jcs': '{"directive":{"body":"We are mid-incident on prod. Hold all deploys until I say '
                          'otherwise.","priority":"urgent","tags":["incident","deploy-freeze"],"title":"Pause '
                          'deploys until the incident is resolved"}}',
 'signed_context': {'from': 'human:alice',
                    'id': 'dir_01HZXDIR0001',
                    'jti': 'jti_01HZXDIRDEMOFIX',
                    'ma2h_version': '0.4',
                    'payload_sha256': '73a4c4c78425ebb286d36fe12905fab35eb07adf38166940137872b43fef0483',
                    't': '1782043200',
                    'to': 'agent:deploybot/dev-team'},
 'canonical_jcs': '{"from":"human:alice","id":"dir_01HZXDIR0001","jti":"jti_01HZXDIRDEMOFIX","ma2h_version":"0.4","payload_sha256":"73a4c4c78425ebb286d36fe12905fab35eb07adf38166940137872b43fef0483","t":"1782043200","to":"agent:deploybot/dev-team"}',
 'header': 'MA2H-Signature: t=1782043200,jti=jti_01HZXDIRDEMOFIX,v1=Bh6zPUfvl_p3SJdgxCPEPgEKZ9VyvXbl8yRKDGzufSk',
 'v1': 'Bh6zPUfvl_p3SJdgxCPEPgEKZ9VyvXbl8yRKDGzufSk'}

# source: autnmy/ma2h-protocol conformance/vectors/dp-006-inbound-tamper-invalid.json
DP_006 = {'jti': 'jti_01HZXDIRDEMOFIX',
 't': '1782043200',
 'v1': 'Bh6zPUfvl_p3SJdgxCPEPgEKZ9VyvXbl8yRKDGzufSk',
 'honest_directive': {'ma2h_version': '0.4',
                      'type': 'directive',
                      'id': 'dir_01HZXDIR0001',
                      'from': 'human:alice',
                      'to': 'agent:deploybot/dev-team',
                      'created_at': '2026-06-30T12:00:00Z',
                      'title': 'Pause deploys until the incident is resolved',
                      'body': 'We are mid-incident on prod. Hold all deploys until I say otherwise.',
                      'priority': 'urgent',
                      'tags': ['incident', 'deploy-freeze']},
 'tampered_directive': {'ma2h_version': '0.4',
                        'type': 'directive',
                        'id': 'dir_01HZXDIR0001',
                        'from': 'human:alice',
                        'to': 'agent:victim/other-bot',
                        'created_at': '2026-06-30T12:00:00Z',
                        'title': 'Pause deploys until the incident is resolved',
                        'body': 'We are mid-incident on prod. Hold all deploys until I say otherwise.',
                        'priority': 'urgent',
                        'tags': ['incident', 'deploy-freeze']}}

# source: autnmy/ma2h-protocol conformance/vectors/dp-008-ack-signature.json
DP_008 = {'ack': {'ma2h_version': '0.4',
         'type': 'ack',
         'in_reply_to': 'msg_01HZXASK0001',
         'by': 'agent:deploybot/dev-team',
         'acked_at': '2026-06-30T15:49:00Z',
         'note': 'got your Ship it — resuming the deploy',
         'resolution_id': 'res_01HZXR3SOLVE'},
 'ack_canonical_jcs': '{"acked_at":"2026-06-30T15:49:00Z","by":"agent:deploybot/dev-team","in_reply_to":"msg_01HZXASK0001","note":"got '
                      'your Ship it — resuming the deploy","resolution_id":"res_01HZXR3SOLVE"}',
 'signed_context': {'ack_sha256': 'bed33692b74ad4f5a84d9575ad2711db9658470180d57a994773d5f1da7607fc',
                    'by': 'agent:deploybot/dev-team',
                    'in_reply_to': 'msg_01HZXASK0001',
                    'jti': 'jti_01HZXACKDEMOFIX',
                    'ma2h_version': '0.4',
                    't': '1782056940'},
 'canonical_jcs': '{"ack_sha256":"bed33692b74ad4f5a84d9575ad2711db9658470180d57a994773d5f1da7607fc","by":"agent:deploybot/dev-team","in_reply_to":"msg_01HZXASK0001","jti":"jti_01HZXACKDEMOFIX","ma2h_version":"0.4","t":"1782056940"}',
 'header': 'MA2H-Signature: t=1782056940,jti=jti_01HZXACKDEMOFIX,v1=BVd0e8A-Qd55YFbrIqk7QwUFacTCa2iQ93fa0Lm3ErU',
 'v1': 'BVd0e8A-Qd55YFbrIqk7QwUFacTCa2iQ93fa0Lm3ErU'}

# source: autnmy/ma2h-protocol conformance/vectors/dp-009-ack-tamper-invalid.json
DP_009 = {'jti': 'jti_01HZXACKDEMOFIX',
 't': '1782056940',
 'v1': 'BVd0e8A-Qd55YFbrIqk7QwUFacTCa2iQ93fa0Lm3ErU',
 'honest_ack': {'ma2h_version': '0.4',
                'type': 'ack',
                'in_reply_to': 'msg_01HZXASK0001',
                'by': 'agent:deploybot/dev-team',
                'acked_at': '2026-06-30T15:49:00Z',
                'note': 'got your Ship it — resuming the deploy',
                'resolution_id': 'res_01HZXR3SOLVE'},
 'tampered_ack': {'ma2h_version': '0.4',
                  'type': 'ack',
                  'in_reply_to': 'msg_01HZXASK0001',
                  'by': 'agent:deploybot/dev-team',
                  'acked_at': '2026-06-30T15:49:00Z',
                  'note': 'HOLD — do not deploy',
                  'resolution_id': 'res_01HZXR3SOLVE'}}

# source: autnmy/ma2h-protocol conformance/vectors/dp-025-mac-well-formedness.json
DP_025 = {'signed_context': {'ma2h_version': '0.5',
                    'callback_url': 'https://deploybot.example/ma2h/resume',
                    'id': 'msg_01J5MACFIX001',
                    'in_reply_to': 'msg_01J5MACFIX001',
                    'jti': 'jti_01J5MACFIXDEMO',
                    'payload_sha256': '3073dec57c04075d0b6bfa17c300fa9600ad92fb13e485e410c8a95274ac47ed',
                    'resolution': 'answered',
                    'resolution_id': 'res_01J5MACFIXRES',
                    'resolved_at': '2026-08-13T00:00:00Z',
                    't': '1786500000'},
 'canonical_jcs': '{"callback_url":"https://deploybot.example/ma2h/resume","id":"msg_01J5MACFIX001","in_reply_to":"msg_01J5MACFIX001","jti":"jti_01J5MACFIXDEMO","ma2h_version":"0.5","payload_sha256":"3073dec57c04075d0b6bfa17c300fa9600ad92fb13e485e410c8a95274ac47ed","resolution":"answered","resolution_id":"res_01J5MACFIXRES","resolved_at":"2026-08-13T00:00:00Z","t":"1786500000"}',
 'v1': 'In3evtBNZywRzuNYkphbw-_764_Wu98zWM5rZ1iN4VI',
 'cases': [{'value': 'In3evtBNZywRzuNYkphbw-_764_Wu98zWM5rZ1iN4VI', 'expect': 'well-formed', 'decoded_length': 32},
           {'value': 'In3evtBNZywRzuNYkphbw-_764_Wu98zWM5rZ1iN4VI=',
            'expect': 'well-formed',
            'decoded_length': 32,
            'decodes_identically_to': 'In3evtBNZywRzuNYkphbw-_764_Wu98zWM5rZ1iN4VI'},
           {'value': '3073dec57c04075d0b6bfa17c300fa9600ad92fb13e', 'expect': 'well-formed', 'decoded_length': 32},
           {'value': 'In3evtBNZywRzuNYkphbw!_764_Wu98zWM5rZ1iN4VI', 'expect': 'ill-formed'},
           {'value': 'In3evtBNZywRzuNYkphbw+_764_Wu98zWM5rZ1iN4VI', 'expect': 'ill-formed'},
           {'value': 'In3evtBNZywRzuNYkphbw-/764_Wu98zWM5rZ1iN4VI', 'expect': 'ill-formed'},
           {'value': 'In3evtBNZywRzuNYkphbw-_764_Wu98zWM5rZ1iN4VI==', 'expect': 'ill-formed'},
           {'value': 'In3evtBNZywRzuNYkphbw-_764_Wu98zWM5rZ1iN4VIA=', 'expect': 'ill-formed'},
           {'value': 'AAAAAAAAAAAAAAAAAAAA', 'expect': 'ill-formed'}]}

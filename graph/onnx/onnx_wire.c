/* onnx_wire.c: a pre-scan of a serialized ONNX model's protobuf wire format that bounds how deeply
 * messages nest, run before protobuf-c unpacks it. protobuf-c recurses once per nested message
 * with no limit of its own, so a small file nesting subgraphs or sequence types thousands of
 * levels deep would exhaust the C stack; the scan refuses it with one line instead.
 *
 * The scan follows the generated descriptors exactly as protobuf-c does: only a length-delimited
 * field whose schema type is a message is descended into (strings, bytes, packed numbers and
 * unknown fields are skipped whole). Its own recursion is bounded by the limit. Data it cannot
 * parse (a truncated varint, a length past the end, a wire type protobuf-c refuses) ends the scan
 * of that message without error: protobuf-c rejects the same bytes in its first pass over the
 * message, before it descends into any member of it.
 */
#include <stdint.h>
#include <stdio.h>

#include "onnx_impl.h"

/* A varint at *p (< end) into *v; 0, or -1 when truncated or longer than 10 bytes. */
static int ow_varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
    uint64_t x = 0;
    for (int shift = 0; shift < 70 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        x |= (uint64_t)(b & 0x7f) << (shift < 64 ? shift : 63);
        if (!(b & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return -1;
}

/* The sub-message descriptor of field id of d, or NULL when the field is not a message. */
static const ProtobufCMessageDescriptor *ow_sub(const ProtobufCMessageDescriptor *d, uint64_t id) {
    for (unsigned i = 0; i < d->n_fields; i++)
        if (d->fields[i].id == id)
            return d->fields[i].type == PROTOBUF_C_TYPE_MESSAGE ? d->fields[i].descriptor : NULL;
    return NULL;
}

/* Scan the message of type d in [p, end) at nesting level depth (the model itself is 1). Returns 0,
 * or -1 with *at the offset from base of the first message beyond max_depth. */
static int ow_scan(const ProtobufCMessageDescriptor *d, const uint8_t *base, const uint8_t *p, const uint8_t *end,
                   int depth, int max_depth, size_t *at) {
    if (depth > max_depth) {
        *at = (size_t)(p - base);
        return -1;
    }
    while (p < end) {
        uint64_t tag, len;
        if (ow_varint(&p, end, &tag) < 0)
            return 0;
        switch (tag & 7) {
        case 0: /* varint */
            if (ow_varint(&p, end, &len) < 0)
                return 0;
            break;
        case 1: /* fixed64 */
            if (end - p < 8)
                return 0;
            p += 8;
            break;
        case 5: /* fixed32 */
            if (end - p < 4)
                return 0;
            p += 4;
            break;
        case 2: { /* length-delimited */
            if (ow_varint(&p, end, &len) < 0 || len > (uint64_t)(end - p))
                return 0;
            const ProtobufCMessageDescriptor *sub = ow_sub(d, tag >> 3);
            if (sub && ow_scan(sub, base, p, p + len, depth + 1, max_depth, at) < 0)
                return -1;
            p += len;
            break;
        }
        default: /* groups and reserved wire types: protobuf-c refuses them */
            return 0;
        }
    }
    return 0;
}

int ox_wire_depth_check(const void *data, size_t len, int max_depth, size_t *at) {
    const uint8_t *p = data;
    *at = 0;
    if (!len)
        return 0;
    return ow_scan(&onnx__model_proto__descriptor, p, p, p + len, 1, max_depth, at);
}

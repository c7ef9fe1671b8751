/* Merging a layer's per-image convolution calls into one launch.  The
 * generated code convolves a batch one image at a time (a loop around
 * cvrt_conv2d, sized for CPU threads); on a GPU each such launch fills a
 * few multiprocessors at most.  A call is held back instead: while the next
 * call is the same layer (weights, bias, geometry, epilogue) on the next
 * image (x, y and the residual each one fixed stride further, reading
 * nothing the held calls write and writing nothing they touch), it joins
 * them, and one launch of the batched kernel does all (image b reads
 * x + b*dx, writes y + b*dy, reads res + b*dy).  Every other launch, and
 * the end of a run, launches what is held first, so the order the stream
 * sees is the program's. */
#include "compiler-core/backend/cuda/host/cuhost_internal.h"

typedef struct span {
    uintptr_t lo, hi;   /* bytes [lo, hi); lo == hi: none */
} span;

static span floats(const void *p, int64_t n)
{
    uintptr_t a = (uintptr_t)p;
    return p && n > 0 ? (span){a, a + (uintptr_t)n * sizeof(float)} : (span){0, 0};
}

static int overlap(span a, span b)
{
    return a.lo < a.hi && b.lo < b.hi && a.lo < b.hi && b.lo < a.hi;
}

/* The hull of images 0..n-1 of a strided sequence whose image 0 is s. */
static span hull(span s, int64_t stride_bytes, int64_t n)
{
    if (s.lo == s.hi)
        return s;
    int64_t last = stride_bytes * (n - 1);
    return last >= 0 ? (span){s.lo, s.hi + (uintptr_t)last}
                     : (span){s.lo - (uintptr_t)-last, s.hi};
}

static int64_t in_elems(const cvcu_conv *c) { return c->C * c->H * c->W; }
static int64_t out_elems(const cvcu_conv *c)
{
    return c->OH * c->OW * (c->OC > 0 ? c->OC : c->C);
}

/* (The scratch pointer differs per image, and no GPU kernel uses it.) */
static int same_layer(const cvcu_conv *a, const cvcu_conv *b)
{
    return a->kernel == b->kernel && a->w == b->w && a->wkind == b->wkind && a->bias == b->bias &&
           (a->res == NULL) == (b->res == NULL) && a->C == b->C &&
           a->H == b->H && a->W == b->W && a->OC == b->OC && a->KH == b->KH && a->KW == b->KW &&
           a->sh == b->sh && a->sw == b->sw && a->pt == b->pt && a->pl == b->pl &&
           a->dh == b->dh && a->dw == b->dw && a->OH == b->OH && a->OW == b->OW &&
           a->act == b->act && a->lo == b->lo && a->hi == b->hi;
}

/* Whether c is image p->n of the pending sequence. */
static int joins(const cvcu_pending *p, const cvcu_conv *c)
{
    const cvcu_conv *f = &p->call;
    /* A dense batch is one product of n * OH*OW columns (32-bit indices). */
    if (!p->n || !same_layer(f, c) ||
        (f->OC > 0 && (p->n + 1) * f->OH * f->OW >= CVCU_TILE_MAX_INDEX))
        return 0;
    int64_t dx = c->x - f->x, dy = c->y - f->y;
    if (p->n > 1 && (dx != p->dx * p->n || dy != p->dy * p->n))
        return 0;
    int64_t sx = p->n > 1 ? p->dx : dx, sy = p->n > 1 ? p->dy : dy;
    if (c->res && c->res - f->res != sy * p->n)
        return 0;
    /* The held images and the new one must not depend on each other. */
    int64_t nb = (int64_t)sizeof(float);
    span writes = hull(floats(f->y, out_elems(f)), sy * nb, p->n);
    span reads = hull(floats(f->x, in_elems(f)), sx * nb, p->n);
    span res_reads = hull(floats(f->res, out_elems(f)), sy * nb, p->n);
    span nx = floats(c->x, in_elems(c)), ny = floats(c->y, out_elems(c));
    span nr = floats(c->res, out_elems(c));
    return !overlap(nx, writes) && !overlap(nr, writes) && !overlap(ny, writes) &&
           !overlap(ny, reads) && !overlap(ny, res_reads);
}

/* The tensor-core kernels stage operands in 16- or 32-bit words and load
 * full 16 x 16 fragments: even a 1 x 1 convolution to 16 channels (a
 * quarter of the tile's rows) runs faster there than on the FMA tiles
 * (mobilenet_v2's projections).  Their weight loads are 16-byte vectors. */
static int tc_pays(const cvcu_ctx *ctx, const cvcu_conv *c)
{
    return ctx->tc_passes > 0 && c->OC >= 16 && c->C * c->KH * c->KW >= 16 &&
           ((uintptr_t)c->w & 15) == 0;
}

/* Channels-last (dev/cudev_nhwc.c) pays where the gather dominates: for
 * windows wider than 1 x 1 over a batch of images or one large image (a
 * single small one keeps the one launch), deep enough that padding the
 * channels to a whole step costs little (not the RGB stem: a stem packed 4
 * channels a pixel, a step spanning taps, ran no faster on the H200).
 * Measured at batch 32 on the H200 (bench/gpu/NOTES.md): 1 x 1
 * convolutions (whose im2col columns are contiguous) ran faster without
 * packing, unless their input is packed already (flush_dense). */
static int nhwc_pays(const cvcu_ctx *ctx, const cvcu_conv *c, int64_t batch)
{
    if (ctx->nhwc != 1)
        return ctx->nhwc == 2;
    return c->KH * c->KW > 1 && c->C >= 16 && (batch >= 4 || batch * c->OH * c->OW >= 65536);
}

void cvcu_pack_forget(cvcu_ctx *ctx)
{
    for (int i = 0; i < CVCU_PACKS; i++)
        ctx->pack[i].x = NULL;
}

void cvcu_pack_new_run(cvcu_ctx *ctx)
{
    cvcu_pack_forget(ctx);
    ctx->pack_clock = 0;
    for (int i = 0; i < CVCU_PACKS; i++)
        ctx->pack[i].used = 0;
}

/* The slot holding c's input packed for `batch` images (cp channels a
 * pixel, mode), or NULL. */
static cvcu_packed *pack_held(cvcu_ctx *ctx, const cvcu_conv *c, int64_t batch, int64_t dx,
                              int64_t cp, int64_t mode)
{
    for (int i = 0; i < CVCU_PACKS; i++) {
        cvcu_packed *s = &ctx->pack[i];
        if (s->x && s->x == c->x && s->C == c->C && s->HW == c->H * c->W && s->cp == cp &&
            s->batch == batch && s->dx == dx && s->mode == mode)
            return s;
    }
    return NULL;
}

/* Forgets the packed inputs whose sources overlap what c writes. */
static void pack_forget_written(cvcu_ctx *ctx, const cvcu_conv *c, int64_t batch, int64_t dy)
{
    int64_t nb = (int64_t)sizeof(float);
    span y = hull(floats(c->y, out_elems(c)), dy * nb, batch);
    for (int i = 0; i < CVCU_PACKS; i++) {
        cvcu_packed *s = &ctx->pack[i];
        if (s->x && overlap(y, hull(floats(s->x, s->C * s->HW), s->dx * nb, s->batch)))
            s->x = NULL;
    }
}

/* The packed input of a channels-last convolution (cvdk_nhwc_pack): a
 * slot that holds it already, else the least recently used one, grown
 * first (waiting for the work that reads it) when too small.  0 where it
 * cannot be had (the gather kernels run instead). */
static CUdeviceptr pack_input(cvcu_ctx *ctx, const cvcu_conv *c, int64_t batch, int64_t dx,
                              int64_t cp, int64_t mode)
{
    const cvcu_driver *d = ctx->drv;
    int64_t hw = c->H * c->W, elems = batch * hw * cp, bytes = elems * (mode == 3 ? 4 : 2);
    if (elems >= CVCU_TILE_MAX_INDEX || ctx->err)
        return 0;
    cvcu_packed *s = pack_held(ctx, c, batch, dx, cp, mode);
    if (s) {
        s->used = ++ctx->pack_clock;
        return s->buf;
    }
    s = &ctx->pack[0];
    for (int i = 1; i < CVCU_PACKS; i++)
        if (ctx->pack[i].used < s->used)
            s = &ctx->pack[i];
    if (bytes > s->cap) {
        if (s->buf) {
            if (cvcu_check(d, d->StreamSynchronize(ctx->stream), "cuStreamSynchronize")) {
                ctx->err = CVCU_E_DRIVER;
                return 0;
            }
            d->MemFree(s->buf);
            *s = (cvcu_packed){0};
        }
        if (d->MemAlloc(&s->buf, (size_t)bytes) != 0) {
            s->buf = 0;
            return 0;
        }
        s->cap = bytes;
    }
    void *p[] = {(void *)&c->x, &s->buf, (void *)&c->C, &hw, &cp, &batch, &dx, &mode};
    int64_t tiles = batch * ((hw + 31) / 32) * ((cp + 63) / 64);
    cvcu_launch_rt(ctx, CVCU_RT_NHWC_PACK, tiles * CVCU_TILE_THREADS, p);
    s->x = c->x, s->C = c->C, s->HW = hw, s->cp = cp, s->batch = batch, s->dx = dx;
    s->mode = mode, s->used = ++ctx->pack_clock;
    return s->buf;
}

/* Blocks of a tensor-core kernel that fit a multiprocessor (its register
 * cap, cuda_device.c). */
static int per_sm(int half, int tall, int nhwc)
{
    if (nhwc)
        return half ? (tall ? 3 : 4) : (tall ? 2 : 3);
    return half && !tall ? 3 : 2;
}

/* A dense convolution over `batch` images as one tiled product whose
 * columns run over every image (dev/cudev_gemm.h), on the tensor cores
 * where they pay, channels-last where that pays. */
static void flush_dense(cvcu_ctx *ctx, cvcu_conv c, int64_t batch, int64_t dx, int64_t dy)
{
    int64_t per = c.OC * c.OH * c.OW, ohw = c.OH * c.OW, ld = batch > 1 ? dy : per, split = 1;
    int half = c.kernel == CVCU_RT_CONV2D_P8H_T, tc = tc_pays(ctx, &c), kernel = c.kernel;
    /* The packed input and its channels, a whole number of K steps; a
     * packed input is reused (resnet's 1 x 1 downsampling convolution reads
     * the input of its block's first one).  The launches here leave the
     * packed inputs valid but for what this convolution writes. */
    int64_t cp = half ? (c.C + 31) / 32 * 32 : (c.C + 15) / 16 * 16, mode = half ? c.wkind : 3;
    ctx->pack_keep = 1;
    CUdeviceptr xt = tc && c.kernel != CVCU_RT_CONV2D_T &&
                             (nhwc_pays(ctx, &c, batch) ||
                              (ctx->nhwc && pack_held(ctx, &c, batch, dx, cp, mode)))
                         ? pack_input(ctx, &c, batch, dx, cp, mode)
                         : 0;
    /* Tiles of 128 rows when they come out whole: each column of B then
     * feeds twice the outputs. */
    int tall = tc && c.OC % 128 == 0 && (half || xt);
    int64_t items = tall ? cvcu_tile_items2(c.OC, ohw * batch) : cvcu_tile_items(c.OC, ohw * batch);
    int64_t nb = (int64_t)sizeof(float);
    /* Split K sums into y first: not when y is (part of) the residual. */
    if (!overlap(hull(floats(c.y, per), dy * nb, batch), hull(floats(c.res, per), dy * nb, batch)))
        split = (xt || batch >= 4) && tc
                    ? cvcu_split_waves(ctx, items / CVCU_TILE_THREADS, c.C * c.KH * c.KW,
                                       per_sm(half, tall, xt != 0))
                    : cvcu_split_k(ctx, items / CVCU_TILE_THREADS, c.C * c.KH * c.KW);
    if (split > 1) {
        void *z[] = {&c.y, &batch, &per, &ld};
        cvcu_launch_rt(ctx, CVCU_RT_ZERO2, per * batch, z);
    }
    void *p[32] = {xt ? (void *)&xt : (void *)&c.x, &c.w}, **q = p + 2;
    if (half)
        *q++ = &c.wkind;
    void *geo[] = {&c.bias, &c.y, &c.C, &c.H, &c.W, &c.OC, &c.KH, &c.KW, &c.sh, &c.sw, &c.pt,
                   &c.pl, &c.dh, &c.dw, &c.OH, &c.OW, &c.res, &c.act, &c.lo, &c.hi};
    for (size_t i = 0; i < sizeof geo / sizeof geo[0]; i++)
        *q++ = geo[i];
    if (c.kernel != CVCU_RT_CONV2D_T)
        *q++ = xt ? (void *)&cp : (void *)&c.scratch;
    *q++ = &batch, *q++ = &dx, *q++ = &dy, *q++ = &split;
    if (tc && !half)
        *q++ = &ctx->tc_passes;
    if (xt)
        kernel = half ? (tall ? CVCU_RT_CONV2D_P8H_NC2 : CVCU_RT_CONV2D_P8H_NC)
                      : (tall ? CVCU_RT_CONV2D_P8_NC2 : CVCU_RT_CONV2D_P8_NC);
    else if (tc)
        kernel = tall   ? CVCU_RT_CONV2D_P8H_TC2
                 : half ? CVCU_RT_CONV2D_P8H_TC
                 : c.kernel == CVCU_RT_CONV2D_P8_T ? CVCU_RT_CONV2D_P8_TC : CVCU_RT_CONV2D_TC;
    cvcu_launch_rt(ctx, kernel, items * split, p);
    if (split > 1) {
        void *e[] = {&c.y, &c.bias, &c.res, &c.OC, &ohw, &c.act, &c.lo, &c.hi, &batch, &dy};
        cvcu_launch_rt(ctx, CVCU_RT_CONV_EPI, per * batch, e);
    }
    ctx->pack_keep = 0;
    pack_forget_written(ctx, &c, batch, dy);
}

void cvcu_flush(cvcu_ctx *ctx)
{
    cvcu_pending *p = &ctx->pending;
    if (!p->n)
        return;
    cvcu_conv c = p->call;
    int64_t batch = p->n, dx = p->dx, dy = p->dy;
    p->n = 0;
    if (c.OC > 0) {
        flush_dense(ctx, c, batch, dx, dy);
        return;
    }
    void *params[] = {&c.x, &c.w, &c.bias, &c.y, &c.C, &c.H, &c.W, &c.KH, &c.KW, &c.sh,
                      &c.sw, &c.pt, &c.pl, &c.dh, &c.dw, &c.OH, &c.OW, &c.res, &c.act,
                      &c.lo, &c.hi, &batch, &dx, &dy};
    int small = c.items_per_image * batch < CVCU_TILE_MAX_INDEX &&
                c.C * c.H * c.W < CVCU_TILE_MAX_INDEX && c.KH * c.KW < CVCU_TILE_MAX_INDEX;
    /* The 32-bit kernel does 4 outputs of a row per item. */
    cvcu_launch_rt(ctx, small ? CVCU_RT_DWCONV2D_BT : c.kernel,
                   small ? batch * c.C * c.OH * ((c.OW + 3) / 4) : c.items_per_image * batch,
                   params);
}

void cvcu_conv_submit(cvcu_ctx *ctx, const cvcu_conv *c)
{
    cvcu_pending *p = &ctx->pending;
    if (ctx->err)
        return;
    if (joins(p, c)) {
        if (p->n == 1) {
            p->dx = c->x - p->call.x;
            p->dy = c->y - p->call.y;
        }
        p->n++;
        return;
    }
    cvcu_flush(ctx);
    p->call = *c;
    p->n = 1;
    p->dx = p->dy = 0;
}

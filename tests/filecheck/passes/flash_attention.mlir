// RUN: tilefuse-opt %s --split-input-file -p flash-attention | filecheck %s

// softmax(Q K^T * s) V: the normalisation sinks below P @ V (o = (e @ v) / l) and
// the ops are tagged for one kernel.
// CHECK-LABEL: func.func @attention
// CHECK:       %scores = linalg.generic {{.*}} attrs = {tilefuse.attention = "attention_0"}
// CHECK:       %scaled = linalg.generic {{.*}} attrs = {tilefuse.attention = "attention_0"}
// CHECK:       %mx = linalg.generic {{.*}} attrs = {tilefuse.attention = "attention_0"}
// CHECK:       %ex = linalg.generic {{.*}} attrs = {tilefuse.attention = "attention_0"}
// CHECK:       %l = linalg.generic {{.*}} ins(%ex : tensor<1x2x40x40xf32>) {{.*}} attrs = {tilefuse.attention = "attention_0"}
// CHECK-NOT:   %pr =
// CHECK:       %[[O:.*]] = linalg.generic {{.*}} ins(%ex, %v : tensor<1x2x40x40xf32>, tensor<1x2x40x16xf32>) {{.*}} attrs = {tilefuse.attention = "attention_0"}
// CHECK:       %[[Y:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], {{.*}} ins(%[[O]], %l : {{.*}}) {{.*}} attrs = {tilefuse.attention = "attention_0"}
// CHECK:         arith.divf
// CHECK:       func.return %[[Y]]
func.func @attention(%q: tensor<1x2x40x16xf32>, %k: tensor<1x2x40x16xf32>, %v: tensor<1x2x40x16xf32>) -> tensor<1x2x40x16xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %neg_inf = arith.constant 0xff800000 : f32
  %scale = arith.constant 2.500000e-01 : f32
  %se = tensor.empty() : tensor<1x2x40x40xf32>
  %si = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%se : tensor<1x2x40x40xf32>) {
  ^bb0(%0: f32, %1: f32):
    linalg.yield %0 : f32
  } -> tensor<1x2x40x40xf32>
  %scores = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<1x2x40x16xf32>, tensor<1x2x40x16xf32>) outs(%si : tensor<1x2x40x40xf32>) {
  ^bb0(%a: f32, %c: f32, %acc: f32):
    %p = arith.mulf %a, %c : f32
    %sum = arith.addf %acc, %p : f32
    linalg.yield %sum : f32
  } -> tensor<1x2x40x40xf32>
  %scaled = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%scores : tensor<1x2x40x40xf32>) outs(%se : tensor<1x2x40x40xf32>) {
  ^bb0(%sv: f32, %out: f32):
    %r = arith.mulf %sv, %scale : f32
    linalg.yield %r : f32
  } -> tensor<1x2x40x40xf32>
  %re = tensor.empty() : tensor<1x2x40xf32>
  %mi = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%neg_inf : f32) outs(%re : tensor<1x2x40xf32>) {
  ^bb0(%2: f32, %3: f32):
    linalg.yield %2 : f32
  } -> tensor<1x2x40xf32>
  %mx = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%scaled : tensor<1x2x40x40xf32>) outs(%mi : tensor<1x2x40xf32>) {
  ^bb0(%in: f32, %a_1: f32):
    %r_1 = arith.maximumf %in, %a_1 : f32
    linalg.yield %r_1 : f32
  } -> tensor<1x2x40xf32>
  %ex = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%scaled, %mx : tensor<1x2x40x40xf32>, tensor<1x2x40xf32>) outs(%se : tensor<1x2x40x40xf32>) {
  ^bb0(%x: f32, %m: f32, %out_1: f32):
    %dd = arith.subf %x, %m : f32
    %e = math.exp %dd : f32
    linalg.yield %e : f32
  } -> tensor<1x2x40x40xf32>
  %zi = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%re : tensor<1x2x40xf32>) {
  ^bb0(%4: f32, %5: f32):
    linalg.yield %4 : f32
  } -> tensor<1x2x40xf32>
  %l = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<1x2x40x40xf32>) outs(%zi : tensor<1x2x40xf32>) {
  ^bb0(%in_1: f32, %a_2: f32):
    %r_2 = arith.addf %in_1, %a_2 : f32
    linalg.yield %r_2 : f32
  } -> tensor<1x2x40xf32>
  %pr = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %l : tensor<1x2x40x40xf32>, tensor<1x2x40xf32>) outs(%se : tensor<1x2x40x40xf32>) {
  ^bb0(%x_1: f32, %ll: f32, %out_2: f32):
    %r_3 = arith.divf %x_1, %ll : f32
    linalg.yield %r_3 : f32
  } -> tensor<1x2x40x40xf32>
  %oe = tensor.empty() : tensor<1x2x40x16xf32>
  %oi = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%oe : tensor<1x2x40x16xf32>) {
  ^bb0(%6: f32, %7: f32):
    linalg.yield %6 : f32
  } -> tensor<1x2x40x16xf32>
  %o = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%pr, %v : tensor<1x2x40x40xf32>, tensor<1x2x40x16xf32>) outs(%oi : tensor<1x2x40x16xf32>) {
  ^bb0(%a_3: f32, %c_1: f32, %acc_1: f32):
    %p_1 = arith.mulf %a_3, %c_1 : f32
    %sum_1 = arith.addf %acc_1, %p_1 : f32
    linalg.yield %sum_1 : f32
  } -> tensor<1x2x40x16xf32>
  func.return %o : tensor<1x2x40x16xf32>
}

// -----

// Softmax over the query dim is not attention: nothing changes.
// CHECK-LABEL: func.func @softmax_over_queries
// CHECK-NOT: tilefuse.attention
// CHECK: func.return
func.func @softmax_over_queries(%q: tensor<1x2x40x16xf32>, %k: tensor<1x2x40x16xf32>, %v: tensor<1x2x40x16xf32>) -> tensor<1x2x40x16xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %neg_inf = arith.constant 0xff800000 : f32
  %scale = arith.constant 2.500000e-01 : f32
  %se = tensor.empty() : tensor<1x2x40x40xf32>
  %si = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%se : tensor<1x2x40x40xf32>) {
  ^bb0(%0: f32, %1: f32):
    linalg.yield %0 : f32
  } -> tensor<1x2x40x40xf32>
  %scores = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<1x2x40x16xf32>, tensor<1x2x40x16xf32>) outs(%si : tensor<1x2x40x40xf32>) {
  ^bb0(%a: f32, %c: f32, %acc: f32):
    %p = arith.mulf %a, %c : f32
    %sum = arith.addf %acc, %p : f32
    linalg.yield %sum : f32
  } -> tensor<1x2x40x40xf32>
  %scaled = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%scores : tensor<1x2x40x40xf32>) outs(%se : tensor<1x2x40x40xf32>) {
  ^bb0(%sv: f32, %out: f32):
    %r = arith.mulf %sv, %scale : f32
    linalg.yield %r : f32
  } -> tensor<1x2x40x40xf32>
  %re = tensor.empty() : tensor<1x2x40xf32>
  %mi = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%neg_inf : f32) outs(%re : tensor<1x2x40xf32>) {
  ^bb0(%2: f32, %3: f32):
    linalg.yield %2 : f32
  } -> tensor<1x2x40xf32>
  %mx = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>], iterator_types = ["parallel", "parallel", "reduction", "parallel"]} ins(%scaled : tensor<1x2x40x40xf32>) outs(%mi : tensor<1x2x40xf32>) {
  ^bb0(%in: f32, %a_1: f32):
    %r_1 = arith.maximumf %in, %a_1 : f32
    linalg.yield %r_1 : f32
  } -> tensor<1x2x40xf32>
  %ex = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%scaled, %mx : tensor<1x2x40x40xf32>, tensor<1x2x40xf32>) outs(%se : tensor<1x2x40x40xf32>) {
  ^bb0(%x: f32, %m: f32, %out_1: f32):
    %dd = arith.subf %x, %m : f32
    %e = math.exp %dd : f32
    linalg.yield %e : f32
  } -> tensor<1x2x40x40xf32>
  %zi = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%re : tensor<1x2x40xf32>) {
  ^bb0(%4: f32, %5: f32):
    linalg.yield %4 : f32
  } -> tensor<1x2x40xf32>
  %l = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>], iterator_types = ["parallel", "parallel", "reduction", "parallel"]} ins(%ex : tensor<1x2x40x40xf32>) outs(%zi : tensor<1x2x40xf32>) {
  ^bb0(%in_1: f32, %a_2: f32):
    %r_2 = arith.addf %in_1, %a_2 : f32
    linalg.yield %r_2 : f32
  } -> tensor<1x2x40xf32>
  %pr = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %l : tensor<1x2x40x40xf32>, tensor<1x2x40xf32>) outs(%se : tensor<1x2x40x40xf32>) {
  ^bb0(%x_1: f32, %ll: f32, %out_2: f32):
    %r_3 = arith.divf %x_1, %ll : f32
    linalg.yield %r_3 : f32
  } -> tensor<1x2x40x40xf32>
  %oe = tensor.empty() : tensor<1x2x40x16xf32>
  %oi = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%oe : tensor<1x2x40x16xf32>) {
  ^bb0(%6: f32, %7: f32):
    linalg.yield %6 : f32
  } -> tensor<1x2x40x16xf32>
  %o = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%pr, %v : tensor<1x2x40x40xf32>, tensor<1x2x40x16xf32>) outs(%oi : tensor<1x2x40x16xf32>) {
  ^bb0(%a_3: f32, %c_1: f32, %acc_1: f32):
    %p_1 = arith.mulf %a_3, %c_1 : f32
    %sum_1 = arith.addf %acc_1, %p_1 : f32
    linalg.yield %sum_1 : f32
  } -> tensor<1x2x40x16xf32>
  func.return %o : tensor<1x2x40x16xf32>
}

// -----

// nanoGPT's attention as torch-mlir exports it: batch matmuls over B*H between
// collapse_shapes and an expand_shape, the heads permuted by copies, masked_fill
// from a mask buffer read as data, `x - max` and `exp` in two ops. The contractions
// run over (b, h) reading the copies' inputs, exp(x - max) is one op, the mask's
// compare is tagged (computed per tile in the kernel).
// CHECK-LABEL: func.func @attn
// CHECK-NOT:   tensor.collapse_shape
// CHECK-NOT:   tensor.expand_shape
// CHECK:       %s3 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d3, d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], {{.*}} ins(%x, %y : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) outs({{.*}} : tensor<1x2x8x8xf32>)
// CHECK:       %masked = linalg.generic {{.*}} attrs = {tilefuse.attention = "attention_0"}
// CHECK:       %ex = linalg.generic {{.*}} ins(%sm, %mx : {{.*}}) {{.*}} attrs = {tilefuse.attention = "attention_0"}
// CHECK-NEXT:  ^{{.*}}
// CHECK-NEXT:    %[[D:.*]] = arith.subf
// CHECK-NEXT:    math.exp %[[D]]
// CHECK:       %[[O:.*]] = linalg.generic {{.*}} ins(%ex, %z : tensor<1x2x8x8xf32>, tensor<1x8x2x4xf32>) {{.*}} attrs = {tilefuse.attention = "attention_0"}
// CHECK:       %[[Y:.*]] = linalg.generic {{.*}} ins(%[[O]], %l : {{.*}}) {{.*}} attrs = {tilefuse.attention = "attention_0"}
// CHECK:         arith.divf
// CHECK:       func.return %[[Y]] : tensor<1x2x8x4xf32>
func.func @attn(%x: tensor<1x8x2x4xf32>, %y: tensor<1x8x2x4xf32>, %z: tensor<1x8x2x4xf32>, %bias: tensor<8x8xf32>) -> tensor<1x2x8x4xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xff800000 : f32
  %ninf_t = arith.constant dense<0xff800000> : tensor<f32>
  %scale = arith.constant 2.500000e-01 : f32
  %eh = tensor.empty() : tensor<1x2x8x4xf32>
  %q = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<1x8x2x4xf32>) outs(%eh : tensor<1x2x8x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<1x2x8x4xf32>
  %k = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%y : tensor<1x8x2x4xf32>) outs(%eh : tensor<1x2x8x4xf32>) {
  ^bb0(%a_1: f32, %o_1: f32):
    linalg.yield %a_1 : f32
  } -> tensor<1x2x8x4xf32>
  %v = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%z : tensor<1x8x2x4xf32>) outs(%eh : tensor<1x2x8x4xf32>) {
  ^bb0(%a_2: f32, %o_2: f32):
    linalg.yield %a_2 : f32
  } -> tensor<1x2x8x4xf32>
  %qc = tensor.collapse_shape %q [[0 : i64, 1 : i64], [2 : i64], [3 : i64]] : tensor<1x2x8x4xf32> into tensor<2x8x4xf32>
  %kc = tensor.collapse_shape %k [[0 : i64, 1 : i64], [2 : i64], [3 : i64]] : tensor<1x2x8x4xf32> into tensor<2x8x4xf32>
  %es3 = tensor.empty() : tensor<2x8x8xf32>
  %is3 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%es3 : tensor<2x8x8xf32>) {
  ^bb0(%0: f32, %1: f32):
    linalg.yield %0 : f32
  } -> tensor<2x8x8xf32>
  %s3 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%qc, %kc : tensor<2x8x4xf32>, tensor<2x8x4xf32>) outs(%is3 : tensor<2x8x8xf32>) {
  ^bb0(%a_3: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a_3, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x8x8xf32>
  %s = tensor.expand_shape %s3 [[0 : i64, 1 : i64], [2 : i64], [3 : i64]] output_shape [1, 2, 8, 8] : tensor<2x8x8xf32> into tensor<1x2x8x8xf32>
  %es = tensor.empty() : tensor<1x2x8x8xf32>
  %ss = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<1x2x8x8xf32>) outs(%es : tensor<1x2x8x8xf32>) {
  ^bb0(%a_4: f32, %o_3: f32):
    %m_1 = arith.mulf %a_4, %scale : f32
    linalg.yield %m_1 : f32
  } -> tensor<1x2x8x8xf32>
  %eb = tensor.empty() : tensor<8x8xi1>
  %masked = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%bias : tensor<8x8xf32>) outs(%eb : tensor<8x8xi1>) {
  ^bb0(%a_5: f32, %o_4: i1):
    %c = arith.cmpf olt, %a_5, %zero : f32
    linalg.yield %c : i1
  } -> tensor<8x8xi1>
  %sm = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d2, d3)>, affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%masked, %ninf_t, %ss : tensor<8x8xi1>, tensor<f32>, tensor<1x2x8x8xf32>) outs(%es : tensor<1x2x8x8xf32>) {
  ^bb0(%c_1: i1, %n: f32, %a_6: f32, %o_5: f32):
    %r_1 = arith.select %c_1, %n, %a_6 : f32
    linalg.yield %r_1 : f32
  } -> tensor<1x2x8x8xf32>
  %er = tensor.empty() : tensor<1x2x8xf32>
  %im = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ninf : f32) outs(%er : tensor<1x2x8xf32>) {
  ^bb0(%2: f32, %3: f32):
    linalg.yield %2 : f32
  } -> tensor<1x2x8xf32>
  %mx = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%sm : tensor<1x2x8x8xf32>) outs(%im : tensor<1x2x8xf32>) {
  ^bb0(%a_7: f32, %acc_1: f32):
    %r_2 = arith.maximumf %a_7, %acc_1 : f32
    linalg.yield %r_2 : f32
  } -> tensor<1x2x8xf32>
  %d = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sm, %mx : tensor<1x2x8x8xf32>, tensor<1x2x8xf32>) outs(%es : tensor<1x2x8x8xf32>) {
  ^bb0(%a_8: f32, %b_1: f32, %o_6: f32):
    %r_3 = arith.subf %a_8, %b_1 : f32
    linalg.yield %r_3 : f32
  } -> tensor<1x2x8x8xf32>
  %ex = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%d : tensor<1x2x8x8xf32>) outs(%es : tensor<1x2x8x8xf32>) {
  ^bb0(%a_9: f32, %o_7: f32):
    %r_4 = math.exp %a_9 : f32
    linalg.yield %r_4 : f32
  } -> tensor<1x2x8x8xf32>
  %iz = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%er : tensor<1x2x8xf32>) {
  ^bb0(%4: f32, %5: f32):
    linalg.yield %4 : f32
  } -> tensor<1x2x8xf32>
  %l = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<1x2x8x8xf32>) outs(%iz : tensor<1x2x8xf32>) {
  ^bb0(%a_10: f32, %acc_2: f32):
    %r_5 = arith.addf %a_10, %acc_2 : f32
    linalg.yield %r_5 : f32
  } -> tensor<1x2x8xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %l : tensor<1x2x8x8xf32>, tensor<1x2x8xf32>) outs(%es : tensor<1x2x8x8xf32>) {
  ^bb0(%a_11: f32, %b_2: f32, %o_8: f32):
    %r_6 = arith.divf %a_11, %b_2 : f32
    linalg.yield %r_6 : f32
  } -> tensor<1x2x8x8xf32>
  %pc = tensor.collapse_shape %p [[0 : i64, 1 : i64], [2 : i64], [3 : i64]] : tensor<1x2x8x8xf32> into tensor<2x8x8xf32>
  %vc = tensor.collapse_shape %v [[0 : i64, 1 : i64], [2 : i64], [3 : i64]] : tensor<1x2x8x4xf32> into tensor<2x8x4xf32>
  %eo3 = tensor.empty() : tensor<2x8x4xf32>
  %io3 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%eo3 : tensor<2x8x4xf32>) {
  ^bb0(%6: f32, %7: f32):
    linalg.yield %6 : f32
  } -> tensor<2x8x4xf32>
  %o3 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%pc, %vc : tensor<2x8x8xf32>, tensor<2x8x4xf32>) outs(%io3 : tensor<2x8x4xf32>) {
  ^bb0(%a_12: f32, %b_3: f32, %acc_3: f32):
    %m_2 = arith.mulf %a_12, %b_3 : f32
    %r_7 = arith.addf %acc_3, %m_2 : f32
    linalg.yield %r_7 : f32
  } -> tensor<2x8x4xf32>
  %o_9 = tensor.expand_shape %o3 [[0 : i64, 1 : i64], [2 : i64], [3 : i64]] output_shape [1, 2, 8, 4] : tensor<2x8x4xf32> into tensor<1x2x8x4xf32>
  func.return %o_9 : tensor<1x2x8x4xf32>
}

// -----

// The same heads through views, the softmax over the query dim: not attention,
// so nothing changes (the views stay, the batch matmuls keep their form).
// CHECK-LABEL: func.func @heads_softmax_over_queries
// CHECK-NOT:   tilefuse.attention
// CHECK:       tensor.collapse_shape
// CHECK:       tensor.expand_shape
// CHECK-NOT:   tilefuse.attention
// CHECK:       func.return
func.func @heads_softmax_over_queries(%x: tensor<1x8x2x4xf32>, %y: tensor<1x8x2x4xf32>, %z: tensor<1x8x2x4xf32>, %bias: tensor<8x8xf32>) -> tensor<1x2x8x4xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xff800000 : f32
  %ninf_t = arith.constant dense<0xff800000> : tensor<f32>
  %scale = arith.constant 2.500000e-01 : f32
  %eh = tensor.empty() : tensor<1x2x8x4xf32>
  %q = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<1x8x2x4xf32>) outs(%eh : tensor<1x2x8x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<1x2x8x4xf32>
  %k = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%y : tensor<1x8x2x4xf32>) outs(%eh : tensor<1x2x8x4xf32>) {
  ^bb0(%a_1: f32, %o_1: f32):
    linalg.yield %a_1 : f32
  } -> tensor<1x2x8x4xf32>
  %v = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%z : tensor<1x8x2x4xf32>) outs(%eh : tensor<1x2x8x4xf32>) {
  ^bb0(%a_2: f32, %o_2: f32):
    linalg.yield %a_2 : f32
  } -> tensor<1x2x8x4xf32>
  %qc = tensor.collapse_shape %q [[0 : i64, 1 : i64], [2 : i64], [3 : i64]] : tensor<1x2x8x4xf32> into tensor<2x8x4xf32>
  %kc = tensor.collapse_shape %k [[0 : i64, 1 : i64], [2 : i64], [3 : i64]] : tensor<1x2x8x4xf32> into tensor<2x8x4xf32>
  %es3 = tensor.empty() : tensor<2x8x8xf32>
  %is3 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%es3 : tensor<2x8x8xf32>) {
  ^bb0(%0: f32, %1: f32):
    linalg.yield %0 : f32
  } -> tensor<2x8x8xf32>
  %s3 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%qc, %kc : tensor<2x8x4xf32>, tensor<2x8x4xf32>) outs(%is3 : tensor<2x8x8xf32>) {
  ^bb0(%a_3: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a_3, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x8x8xf32>
  %s = tensor.expand_shape %s3 [[0 : i64, 1 : i64], [2 : i64], [3 : i64]] output_shape [1, 2, 8, 8] : tensor<2x8x8xf32> into tensor<1x2x8x8xf32>
  %es = tensor.empty() : tensor<1x2x8x8xf32>
  %ss = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<1x2x8x8xf32>) outs(%es : tensor<1x2x8x8xf32>) {
  ^bb0(%a_4: f32, %o_3: f32):
    %m_1 = arith.mulf %a_4, %scale : f32
    linalg.yield %m_1 : f32
  } -> tensor<1x2x8x8xf32>
  %eb = tensor.empty() : tensor<8x8xi1>
  %masked = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%bias : tensor<8x8xf32>) outs(%eb : tensor<8x8xi1>) {
  ^bb0(%a_5: f32, %o_4: i1):
    %c = arith.cmpf olt, %a_5, %zero : f32
    linalg.yield %c : i1
  } -> tensor<8x8xi1>
  %sm = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d2, d3)>, affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%masked, %ninf_t, %ss : tensor<8x8xi1>, tensor<f32>, tensor<1x2x8x8xf32>) outs(%es : tensor<1x2x8x8xf32>) {
  ^bb0(%c_1: i1, %n: f32, %a_6: f32, %o_5: f32):
    %r_1 = arith.select %c_1, %n, %a_6 : f32
    linalg.yield %r_1 : f32
  } -> tensor<1x2x8x8xf32>
  %er = tensor.empty() : tensor<1x2x8xf32>
  %im = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ninf : f32) outs(%er : tensor<1x2x8xf32>) {
  ^bb0(%2: f32, %3: f32):
    linalg.yield %2 : f32
  } -> tensor<1x2x8xf32>
  %mx = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>], iterator_types = ["parallel", "parallel", "reduction", "parallel"]} ins(%sm : tensor<1x2x8x8xf32>) outs(%im : tensor<1x2x8xf32>) {
  ^bb0(%a_7: f32, %acc_1: f32):
    %r_2 = arith.maximumf %a_7, %acc_1 : f32
    linalg.yield %r_2 : f32
  } -> tensor<1x2x8xf32>
  %d = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sm, %mx : tensor<1x2x8x8xf32>, tensor<1x2x8xf32>) outs(%es : tensor<1x2x8x8xf32>) {
  ^bb0(%a_8: f32, %b_1: f32, %o_6: f32):
    %r_3 = arith.subf %a_8, %b_1 : f32
    linalg.yield %r_3 : f32
  } -> tensor<1x2x8x8xf32>
  %ex = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%d : tensor<1x2x8x8xf32>) outs(%es : tensor<1x2x8x8xf32>) {
  ^bb0(%a_9: f32, %o_7: f32):
    %r_4 = math.exp %a_9 : f32
    linalg.yield %r_4 : f32
  } -> tensor<1x2x8x8xf32>
  %iz = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%er : tensor<1x2x8xf32>) {
  ^bb0(%4: f32, %5: f32):
    linalg.yield %4 : f32
  } -> tensor<1x2x8xf32>
  %l = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>], iterator_types = ["parallel", "parallel", "reduction", "parallel"]} ins(%ex : tensor<1x2x8x8xf32>) outs(%iz : tensor<1x2x8xf32>) {
  ^bb0(%a_10: f32, %acc_2: f32):
    %r_5 = arith.addf %a_10, %acc_2 : f32
    linalg.yield %r_5 : f32
  } -> tensor<1x2x8xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %l : tensor<1x2x8x8xf32>, tensor<1x2x8xf32>) outs(%es : tensor<1x2x8x8xf32>) {
  ^bb0(%a_11: f32, %b_2: f32, %o_8: f32):
    %r_6 = arith.divf %a_11, %b_2 : f32
    linalg.yield %r_6 : f32
  } -> tensor<1x2x8x8xf32>
  %pc = tensor.collapse_shape %p [[0 : i64, 1 : i64], [2 : i64], [3 : i64]] : tensor<1x2x8x8xf32> into tensor<2x8x8xf32>
  %vc = tensor.collapse_shape %v [[0 : i64, 1 : i64], [2 : i64], [3 : i64]] : tensor<1x2x8x4xf32> into tensor<2x8x4xf32>
  %eo3 = tensor.empty() : tensor<2x8x4xf32>
  %io3 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%eo3 : tensor<2x8x4xf32>) {
  ^bb0(%6: f32, %7: f32):
    linalg.yield %6 : f32
  } -> tensor<2x8x4xf32>
  %o3 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%pc, %vc : tensor<2x8x8xf32>, tensor<2x8x4xf32>) outs(%io3 : tensor<2x8x4xf32>) {
  ^bb0(%a_12: f32, %b_3: f32, %acc_3: f32):
    %m_2 = arith.mulf %a_12, %b_3 : f32
    %r_7 = arith.addf %acc_3, %m_2 : f32
    linalg.yield %r_7 : f32
  } -> tensor<2x8x4xf32>
  %o_9 = tensor.expand_shape %o3 [[0 : i64, 1 : i64], [2 : i64], [3 : i64]] output_shape [1, 2, 8, 4] : tensor<2x8x4xf32> into tensor<1x2x8x4xf32>
  func.return %o_9 : tensor<1x2x8x4xf32>
}

// -----

// torch-mlir's SDPA: rows whose every score is -inf get zero probabilities
// (select(and_j(u == -inf), 0, p)). exp(u - m) is guarded (0 for m = -inf, as the
// online loop computes), and o = select(m == -inf, e @ v, (e @ v) / l): exact, the
// all-masked reduction is gone.
// CHECK-LABEL: func.func @sdpa
// CHECK-NOT:   %all =
// CHECK:       %ex = linalg.generic {{.*}} attrs = {tilefuse.attention = "attention_0"}
// CHECK:         %[[NI:.*]] = arith.constant 0xff800000 : f32
// CHECK:         %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:         %[[C:.*]] = arith.cmpf oeq, %[[M:.*]], %[[NI]] : f32
// CHECK:         %[[G:.*]] = arith.select %[[C]], %[[Z]], %[[M]] : f32
// CHECK:         arith.subf %{{.*}}, %[[G]] : f32
// CHECK:       %[[O:.*]] = linalg.generic {{.*}} ins(%ex, %v : {{.*}}) {{.*}} attrs = {tilefuse.attention = "attention_0"}
// CHECK:       %[[Y:.*]] = linalg.generic {{.*}} ins(%[[O]], %l, %mx : {{.*}}) {{.*}} attrs = {tilefuse.attention = "attention_0"}
// CHECK:         ^{{.*}}(%[[A:.*]]: f32, %[[B:.*]]: f32, %[[MM:.*]]: f32, %{{.*}}: f32):
// CHECK:         %[[Q:.*]] = arith.divf %[[A]], %[[B]] : f32
// CHECK:         %[[C2:.*]] = arith.cmpf oeq, %[[MM]], %{{.*}} : f32
// CHECK:         arith.select %[[C2]], %[[A]], %[[Q]] : f32
// CHECK-NOT:   %all =
// CHECK:       func.return %[[Y]]
func.func @sdpa(%q: tensor<1x2x8x4xf32>, %k: tensor<1x2x8x4xf32>, %v: tensor<1x2x8x4xf32>, %bias: tensor<8x8xf32>) -> tensor<1x2x8x4xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xff800000 : f32
  %zero_t = arith.constant dense<0.000000e+00> : tensor<f32>
  %ninf_t = arith.constant dense<0xff800000> : tensor<f32>
  %zeros = arith.constant dense<0.000000e+00> : tensor<1x2x8x8xf32>
  %ninf64 = arith.constant 0xfff0000000000000 : f64
  %true = arith.constant true
  %c5 = arith.constant 5 : index
  %scale = arith.constant 2.500000e-01 : f32
  %eb = tensor.empty() : tensor<8x8xi1>
  %keep = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%bias : tensor<8x8xf32>) outs(%eb : tensor<8x8xi1>) {
  ^bb0(%a: f32, %o: i1):
    %i = linalg.index 0 : index
    %not5 = arith.cmpi ne, %i, %c5 : index
    %pos = arith.cmpf oge, %a, %zero : f32
    %r = arith.andi %not5, %pos : i1
    linalg.yield %r : i1
  } -> tensor<8x8xi1>
  %ef = tensor.empty() : tensor<8x8xf32>
  %add = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%keep, %zero_t, %ninf_t : tensor<8x8xi1>, tensor<f32>, tensor<f32>) outs(%ef : tensor<8x8xf32>) {
  ^bb0(%c: i1, %a_1: f32, %b: f32, %o_1: f32):
    %r_1 = arith.select %c, %a_1, %b : f32
    linalg.yield %r_1 : f32
  } -> tensor<8x8xf32>
  %es = tensor.empty() : tensor<1x2x8x8xf32>
  %is = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%es : tensor<1x2x8x8xf32>) {
  ^bb0(%0: f32, %1: f32):
    linalg.yield %0 : f32
  } -> tensor<1x2x8x8xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>) outs(%is : tensor<1x2x8x8xf32>) {
  ^bb0(%a_2: f32, %b_1: f32, %acc: f32):
    %m = arith.mulf %a_2, %b_1 : f32
    %r_2 = arith.addf %acc, %m : f32
    linalg.yield %r_2 : f32
  } -> tensor<1x2x8x8xf32>
  %u = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %add : tensor<1x2x8x8xf32>, tensor<8x8xf32>) outs(%es : tensor<1x2x8x8xf32>) {
  ^bb0(%a_3: f32, %b_2: f32, %o_2: f32):
    %x = arith.mulf %a_3, %scale : f32
    %r_3 = arith.addf %x, %b_2 : f32
    linalg.yield %r_3 : f32
  } -> tensor<1x2x8x8xf32>
  %er = tensor.empty() : tensor<1x2x8xf32>
  %im = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ninf : f32) outs(%er : tensor<1x2x8xf32>) {
  ^bb0(%2: f32, %3: f32):
    linalg.yield %2 : f32
  } -> tensor<1x2x8xf32>
  %mx = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%u : tensor<1x2x8x8xf32>) outs(%im : tensor<1x2x8xf32>) {
  ^bb0(%a_4: f32, %acc_1: f32):
    %r_4 = arith.maximumf %a_4, %acc_1 : f32
    linalg.yield %r_4 : f32
  } -> tensor<1x2x8xf32>
  %ex = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%u, %mx : tensor<1x2x8x8xf32>, tensor<1x2x8xf32>) outs(%es : tensor<1x2x8x8xf32>) {
  ^bb0(%a_5: f32, %b_3: f32, %o_3: f32):
    %d = arith.subf %a_5, %b_3 : f32
    %r_5 = math.exp %d : f32
    linalg.yield %r_5 : f32
  } -> tensor<1x2x8x8xf32>
  %iz = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%er : tensor<1x2x8xf32>) {
  ^bb0(%4: f32, %5: f32):
    linalg.yield %4 : f32
  } -> tensor<1x2x8xf32>
  %l = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<1x2x8x8xf32>) outs(%iz : tensor<1x2x8xf32>) {
  ^bb0(%a_6: f32, %acc_2: f32):
    %r_6 = arith.addf %a_6, %acc_2 : f32
    linalg.yield %r_6 : f32
  } -> tensor<1x2x8xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %l : tensor<1x2x8x8xf32>, tensor<1x2x8xf32>) outs(%es : tensor<1x2x8x8xf32>) {
  ^bb0(%a_7: f32, %b_4: f32, %o_4: f32):
    %r_7 = arith.divf %a_7, %b_4 : f32
    linalg.yield %r_7 : f32
  } -> tensor<1x2x8x8xf32>
  %ei = tensor.empty() : tensor<1x2x8x8xi1>
  %isninf = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%u : tensor<1x2x8x8xf32>) outs(%ei : tensor<1x2x8x8xi1>) {
  ^bb0(%a_8: f32, %o_5: i1):
    %w = arith.extf %a_8 : f32 to f64
    %r_8 = arith.cmpf oeq, %w, %ninf64 : f64
    linalg.yield %r_8 : i1
  } -> tensor<1x2x8x8xi1>
  %erb = tensor.empty() : tensor<1x2x8xi1>
  %it = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%true : i1) outs(%erb : tensor<1x2x8xi1>) {
  ^bb0(%6: i1, %7: i1):
    linalg.yield %6 : i1
  } -> tensor<1x2x8xi1>
  %all = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%isninf : tensor<1x2x8x8xi1>) outs(%it : tensor<1x2x8xi1>) {
  ^bb0(%a_9: i1, %acc_3: i1):
    %r_9 = arith.andi %a_9, %acc_3 : i1
    linalg.yield %r_9 : i1
  } -> tensor<1x2x8xi1>
  %pz = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%all, %zeros, %p : tensor<1x2x8xi1>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) outs(%es : tensor<1x2x8x8xf32>) {
  ^bb0(%c_1: i1, %a_10: f32, %b_5: f32, %o_6: f32):
    %r_10 = arith.select %c_1, %a_10, %b_5 : f32
    linalg.yield %r_10 : f32
  } -> tensor<1x2x8x8xf32>
  %eo = tensor.empty() : tensor<1x2x8x4xf32>
  %io = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%eo : tensor<1x2x8x4xf32>) {
  ^bb0(%8: f32, %9: f32):
    linalg.yield %8 : f32
  } -> tensor<1x2x8x4xf32>
  %o_7 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%pz, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32>) outs(%io : tensor<1x2x8x4xf32>) {
  ^bb0(%a_11: f32, %b_6: f32, %acc_4: f32):
    %m_1 = arith.mulf %a_11, %b_6 : f32
    %r_11 = arith.addf %acc_4, %m_1 : f32
    linalg.yield %r_11 : f32
  } -> tensor<1x2x8x4xf32>
  func.return %o_7 : tensor<1x2x8x4xf32>
}

// -----

// A near-miss of SDPA's zeroed rows: the rows zeroed are those whose scores are all
// 0, not all -inf. Not the masked-row form: no rewrite.
// CHECK-LABEL: func.func @sdpa_zeroes_rows_not_all_masked
// CHECK-NOT:   tilefuse.attention
// CHECK:       func.return
func.func @sdpa_zeroes_rows_not_all_masked(%q: tensor<1x2x8x4xf32>, %k: tensor<1x2x8x4xf32>, %v: tensor<1x2x8x4xf32>, %bias: tensor<8x8xf32>) -> tensor<1x2x8x4xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xff800000 : f32
  %zero_t = arith.constant dense<0.000000e+00> : tensor<f32>
  %ninf_t = arith.constant dense<0xff800000> : tensor<f32>
  %zeros = arith.constant dense<0.000000e+00> : tensor<1x2x8x8xf32>
  %ninf64 = arith.constant 0xfff0000000000000 : f64
  %zero64 = arith.constant 0.000000e+00 : f64
  %true = arith.constant true
  %c5 = arith.constant 5 : index
  %scale = arith.constant 2.500000e-01 : f32
  %eb = tensor.empty() : tensor<8x8xi1>
  %keep = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%bias : tensor<8x8xf32>) outs(%eb : tensor<8x8xi1>) {
  ^bb0(%a: f32, %o: i1):
    %i = linalg.index 0 : index
    %not5 = arith.cmpi ne, %i, %c5 : index
    %pos = arith.cmpf oge, %a, %zero : f32
    %r = arith.andi %not5, %pos : i1
    linalg.yield %r : i1
  } -> tensor<8x8xi1>
  %ef = tensor.empty() : tensor<8x8xf32>
  %add = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%keep, %zero_t, %ninf_t : tensor<8x8xi1>, tensor<f32>, tensor<f32>) outs(%ef : tensor<8x8xf32>) {
  ^bb0(%c: i1, %a_1: f32, %b: f32, %o_1: f32):
    %r_1 = arith.select %c, %a_1, %b : f32
    linalg.yield %r_1 : f32
  } -> tensor<8x8xf32>
  %es = tensor.empty() : tensor<1x2x8x8xf32>
  %is = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%es : tensor<1x2x8x8xf32>) {
  ^bb0(%0: f32, %1: f32):
    linalg.yield %0 : f32
  } -> tensor<1x2x8x8xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>) outs(%is : tensor<1x2x8x8xf32>) {
  ^bb0(%a_2: f32, %b_1: f32, %acc: f32):
    %m = arith.mulf %a_2, %b_1 : f32
    %r_2 = arith.addf %acc, %m : f32
    linalg.yield %r_2 : f32
  } -> tensor<1x2x8x8xf32>
  %u = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %add : tensor<1x2x8x8xf32>, tensor<8x8xf32>) outs(%es : tensor<1x2x8x8xf32>) {
  ^bb0(%a_3: f32, %b_2: f32, %o_2: f32):
    %x = arith.mulf %a_3, %scale : f32
    %r_3 = arith.addf %x, %b_2 : f32
    linalg.yield %r_3 : f32
  } -> tensor<1x2x8x8xf32>
  %er = tensor.empty() : tensor<1x2x8xf32>
  %im = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ninf : f32) outs(%er : tensor<1x2x8xf32>) {
  ^bb0(%2: f32, %3: f32):
    linalg.yield %2 : f32
  } -> tensor<1x2x8xf32>
  %mx = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%u : tensor<1x2x8x8xf32>) outs(%im : tensor<1x2x8xf32>) {
  ^bb0(%a_4: f32, %acc_1: f32):
    %r_4 = arith.maximumf %a_4, %acc_1 : f32
    linalg.yield %r_4 : f32
  } -> tensor<1x2x8xf32>
  %ex = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%u, %mx : tensor<1x2x8x8xf32>, tensor<1x2x8xf32>) outs(%es : tensor<1x2x8x8xf32>) {
  ^bb0(%a_5: f32, %b_3: f32, %o_3: f32):
    %d = arith.subf %a_5, %b_3 : f32
    %r_5 = math.exp %d : f32
    linalg.yield %r_5 : f32
  } -> tensor<1x2x8x8xf32>
  %iz = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%er : tensor<1x2x8xf32>) {
  ^bb0(%4: f32, %5: f32):
    linalg.yield %4 : f32
  } -> tensor<1x2x8xf32>
  %l = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<1x2x8x8xf32>) outs(%iz : tensor<1x2x8xf32>) {
  ^bb0(%a_6: f32, %acc_2: f32):
    %r_6 = arith.addf %a_6, %acc_2 : f32
    linalg.yield %r_6 : f32
  } -> tensor<1x2x8xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %l : tensor<1x2x8x8xf32>, tensor<1x2x8xf32>) outs(%es : tensor<1x2x8x8xf32>) {
  ^bb0(%a_7: f32, %b_4: f32, %o_4: f32):
    %r_7 = arith.divf %a_7, %b_4 : f32
    linalg.yield %r_7 : f32
  } -> tensor<1x2x8x8xf32>
  %ei = tensor.empty() : tensor<1x2x8x8xi1>
  %isninf = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%u : tensor<1x2x8x8xf32>) outs(%ei : tensor<1x2x8x8xi1>) {
  ^bb0(%a_8: f32, %o_5: i1):
    %w = arith.extf %a_8 : f32 to f64
    %r_8 = arith.cmpf oeq, %w, %zero64 : f64
    linalg.yield %r_8 : i1
  } -> tensor<1x2x8x8xi1>
  %erb = tensor.empty() : tensor<1x2x8xi1>
  %it = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%true : i1) outs(%erb : tensor<1x2x8xi1>) {
  ^bb0(%6: i1, %7: i1):
    linalg.yield %6 : i1
  } -> tensor<1x2x8xi1>
  %all = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%isninf : tensor<1x2x8x8xi1>) outs(%it : tensor<1x2x8xi1>) {
  ^bb0(%a_9: i1, %acc_3: i1):
    %r_9 = arith.andi %a_9, %acc_3 : i1
    linalg.yield %r_9 : i1
  } -> tensor<1x2x8xi1>
  %pz = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%all, %zeros, %p : tensor<1x2x8xi1>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) outs(%es : tensor<1x2x8x8xf32>) {
  ^bb0(%c_1: i1, %a_10: f32, %b_5: f32, %o_6: f32):
    %r_10 = arith.select %c_1, %a_10, %b_5 : f32
    linalg.yield %r_10 : f32
  } -> tensor<1x2x8x8xf32>
  %eo = tensor.empty() : tensor<1x2x8x4xf32>
  %io = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%eo : tensor<1x2x8x4xf32>) {
  ^bb0(%8: f32, %9: f32):
    linalg.yield %8 : f32
  } -> tensor<1x2x8x4xf32>
  %o_7 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%pz, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32>) outs(%io : tensor<1x2x8x4xf32>) {
  ^bb0(%a_11: f32, %b_6: f32, %acc_4: f32):
    %m_1 = arith.mulf %a_11, %b_6 : f32
    %r_11 = arith.addf %acc_4, %m_1 : f32
    linalg.yield %r_11 : f32
  } -> tensor<1x2x8x4xf32>
  func.return %o_7 : tensor<1x2x8x4xf32>
}

// -----

// SDPA's zeroed rows, the row sums also returned: guarding exp(u - m) would change
// them in fully masked rows (0, not NaN), so no rewrite.
// CHECK-LABEL: func.func @sdpa_row_sums_returned
// CHECK-NOT:   tilefuse.attention
// CHECK:       func.return
func.func @sdpa_row_sums_returned(%q: tensor<1x2x8x4xf32>, %k: tensor<1x2x8x4xf32>, %v: tensor<1x2x8x4xf32>, %bias: tensor<8x8xf32>) -> (tensor<1x2x8x4xf32>, tensor<1x2x8xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xff800000 : f32
  %zero_t = arith.constant dense<0.000000e+00> : tensor<f32>
  %ninf_t = arith.constant dense<0xff800000> : tensor<f32>
  %zeros = arith.constant dense<0.000000e+00> : tensor<1x2x8x8xf32>
  %ninf64 = arith.constant 0xfff0000000000000 : f64
  %true = arith.constant true
  %c5 = arith.constant 5 : index
  %scale = arith.constant 2.500000e-01 : f32
  %eb = tensor.empty() : tensor<8x8xi1>
  %keep = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%bias : tensor<8x8xf32>) outs(%eb : tensor<8x8xi1>) {
  ^bb0(%a: f32, %o: i1):
    %i = linalg.index 0 : index
    %not5 = arith.cmpi ne, %i, %c5 : index
    %pos = arith.cmpf oge, %a, %zero : f32
    %r = arith.andi %not5, %pos : i1
    linalg.yield %r : i1
  } -> tensor<8x8xi1>
  %ef = tensor.empty() : tensor<8x8xf32>
  %add = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%keep, %zero_t, %ninf_t : tensor<8x8xi1>, tensor<f32>, tensor<f32>) outs(%ef : tensor<8x8xf32>) {
  ^bb0(%c: i1, %a_1: f32, %b: f32, %o_1: f32):
    %r_1 = arith.select %c, %a_1, %b : f32
    linalg.yield %r_1 : f32
  } -> tensor<8x8xf32>
  %es = tensor.empty() : tensor<1x2x8x8xf32>
  %is = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%es : tensor<1x2x8x8xf32>) {
  ^bb0(%0: f32, %1: f32):
    linalg.yield %0 : f32
  } -> tensor<1x2x8x8xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>) outs(%is : tensor<1x2x8x8xf32>) {
  ^bb0(%a_2: f32, %b_1: f32, %acc: f32):
    %m = arith.mulf %a_2, %b_1 : f32
    %r_2 = arith.addf %acc, %m : f32
    linalg.yield %r_2 : f32
  } -> tensor<1x2x8x8xf32>
  %u = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %add : tensor<1x2x8x8xf32>, tensor<8x8xf32>) outs(%es : tensor<1x2x8x8xf32>) {
  ^bb0(%a_3: f32, %b_2: f32, %o_2: f32):
    %x = arith.mulf %a_3, %scale : f32
    %r_3 = arith.addf %x, %b_2 : f32
    linalg.yield %r_3 : f32
  } -> tensor<1x2x8x8xf32>
  %er = tensor.empty() : tensor<1x2x8xf32>
  %im = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ninf : f32) outs(%er : tensor<1x2x8xf32>) {
  ^bb0(%2: f32, %3: f32):
    linalg.yield %2 : f32
  } -> tensor<1x2x8xf32>
  %mx = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%u : tensor<1x2x8x8xf32>) outs(%im : tensor<1x2x8xf32>) {
  ^bb0(%a_4: f32, %acc_1: f32):
    %r_4 = arith.maximumf %a_4, %acc_1 : f32
    linalg.yield %r_4 : f32
  } -> tensor<1x2x8xf32>
  %ex = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%u, %mx : tensor<1x2x8x8xf32>, tensor<1x2x8xf32>) outs(%es : tensor<1x2x8x8xf32>) {
  ^bb0(%a_5: f32, %b_3: f32, %o_3: f32):
    %d = arith.subf %a_5, %b_3 : f32
    %r_5 = math.exp %d : f32
    linalg.yield %r_5 : f32
  } -> tensor<1x2x8x8xf32>
  %iz = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%er : tensor<1x2x8xf32>) {
  ^bb0(%4: f32, %5: f32):
    linalg.yield %4 : f32
  } -> tensor<1x2x8xf32>
  %l = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<1x2x8x8xf32>) outs(%iz : tensor<1x2x8xf32>) {
  ^bb0(%a_6: f32, %acc_2: f32):
    %r_6 = arith.addf %a_6, %acc_2 : f32
    linalg.yield %r_6 : f32
  } -> tensor<1x2x8xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %l : tensor<1x2x8x8xf32>, tensor<1x2x8xf32>) outs(%es : tensor<1x2x8x8xf32>) {
  ^bb0(%a_7: f32, %b_4: f32, %o_4: f32):
    %r_7 = arith.divf %a_7, %b_4 : f32
    linalg.yield %r_7 : f32
  } -> tensor<1x2x8x8xf32>
  %ei = tensor.empty() : tensor<1x2x8x8xi1>
  %isninf = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%u : tensor<1x2x8x8xf32>) outs(%ei : tensor<1x2x8x8xi1>) {
  ^bb0(%a_8: f32, %o_5: i1):
    %w = arith.extf %a_8 : f32 to f64
    %r_8 = arith.cmpf oeq, %w, %ninf64 : f64
    linalg.yield %r_8 : i1
  } -> tensor<1x2x8x8xi1>
  %erb = tensor.empty() : tensor<1x2x8xi1>
  %it = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%true : i1) outs(%erb : tensor<1x2x8xi1>) {
  ^bb0(%6: i1, %7: i1):
    linalg.yield %6 : i1
  } -> tensor<1x2x8xi1>
  %all = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%isninf : tensor<1x2x8x8xi1>) outs(%it : tensor<1x2x8xi1>) {
  ^bb0(%a_9: i1, %acc_3: i1):
    %r_9 = arith.andi %a_9, %acc_3 : i1
    linalg.yield %r_9 : i1
  } -> tensor<1x2x8xi1>
  %pz = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%all, %zeros, %p : tensor<1x2x8xi1>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) outs(%es : tensor<1x2x8x8xf32>) {
  ^bb0(%c_1: i1, %a_10: f32, %b_5: f32, %o_6: f32):
    %r_10 = arith.select %c_1, %a_10, %b_5 : f32
    linalg.yield %r_10 : f32
  } -> tensor<1x2x8x8xf32>
  %eo = tensor.empty() : tensor<1x2x8x4xf32>
  %io = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%eo : tensor<1x2x8x4xf32>) {
  ^bb0(%8: f32, %9: f32):
    linalg.yield %8 : f32
  } -> tensor<1x2x8x4xf32>
  %o_7 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%pz, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32>) outs(%io : tensor<1x2x8x4xf32>) {
  ^bb0(%a_11: f32, %b_6: f32, %acc_4: f32):
    %m_1 = arith.mulf %a_11, %b_6 : f32
    %r_11 = arith.addf %acc_4, %m_1 : f32
    linalg.yield %r_11 : f32
  } -> tensor<1x2x8x4xf32>
  func.return %o_7, %l : tensor<1x2x8x4xf32>, tensor<1x2x8xf32>
}

// -----

// A bf16 program as torch-mlir writes it: the scores rounded to bf16 (kept: per
// tile in the kernel), the softmax in f32, p rounded to bf16 before P V (a bf16 dot
// accumulating in f32). The rounding moves onto e (truncf(e), tagged; FlashAttention's
// P~ against the running max) and P V reads it; o = (truncf(e) @ v) / l.
// CHECK-LABEL: func.func @attention_bf16
// CHECK:       %s16 = linalg.generic {{.*}} attrs = {tilefuse.attention = "attention_0"}
// CHECK-NOT:   %p16 =
// CHECK:       %[[R:.*]] = linalg.generic {{.*}} ins(%ex : tensor<1x2x8x8xf32>) outs({{.*}} : tensor<1x2x8x8xbf16>) attrs = {tilefuse.attention = "attention_0"}
// CHECK-NEXT:  ^{{.*}}
// CHECK-NEXT:    arith.truncf %{{.*}} : f32 to bf16
// CHECK:       %[[O:.*]] = linalg.generic {{.*}} ins(%[[R]], %v : tensor<1x2x8x8xbf16>, tensor<1x2x8x4xbf16>) {{.*}} attrs = {tilefuse.attention = "attention_0"}
// CHECK:       %[[Y:.*]] = linalg.generic {{.*}} ins(%[[O]], %l : {{.*}}) {{.*}} attrs = {tilefuse.attention = "attention_0"}
// CHECK:         arith.divf
// CHECK:       func.return %[[Y]] : tensor<1x2x8x4xf32>
#qk = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
#kk = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>
#vv = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>
#o5 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#row = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
func.func @attention_bf16(%q: tensor<1x2x8x4xbf16>, %k: tensor<1x2x8x4xbf16>, %v: tensor<1x2x8x4xbf16>) -> tensor<1x2x8x4xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xff800000 : f32
  %es = tensor.empty() : tensor<1x2x8x8xf32>
  %es16 = tensor.empty() : tensor<1x2x8x8xbf16>
  %is = linalg.fill ins(%zero : f32) outs(%es : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %s = linalg.generic {indexing_maps = [#qk, #kk, #o5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<1x2x8x4xbf16>, tensor<1x2x8x4xbf16>) outs(%is : tensor<1x2x8x8xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %aw = arith.extf %a : bf16 to f32
    %bw = arith.extf %b : bf16 to f32
    %m = arith.mulf %aw, %bw : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %s16 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<1x2x8x8xf32>) outs(%es16 : tensor<1x2x8x8xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %r = arith.truncf %a : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<1x2x8x8xbf16>
  %u = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s16 : tensor<1x2x8x8xbf16>) outs(%es : tensor<1x2x8x8xf32>) {
  ^bb0(%a: bf16, %o: f32):
    %r = arith.extf %a : bf16 to f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %er = tensor.empty() : tensor<1x2x8xf32>
  %im = linalg.fill ins(%ninf : f32) outs(%er : tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  %mx = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%u : tensor<1x2x8x8xf32>) outs(%im : tensor<1x2x8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8xf32>
  %ex = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%u, %mx : tensor<1x2x8x8xf32>, tensor<1x2x8xf32>) outs(%es : tensor<1x2x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %iz = linalg.fill ins(%zero : f32) outs(%er : tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  %l = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<1x2x8x8xf32>) outs(%iz : tensor<1x2x8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8xf32>
  %p = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %l : tensor<1x2x8x8xf32>, tensor<1x2x8xf32>) outs(%es : tensor<1x2x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %p16 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%p : tensor<1x2x8x8xf32>) outs(%es16 : tensor<1x2x8x8xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %r = arith.truncf %a : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<1x2x8x8xbf16>
  %eo = tensor.empty() : tensor<1x2x8x4xf32>
  %io = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  %o = linalg.generic {indexing_maps = [#qk, #vv, #o5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p16, %v : tensor<1x2x8x8xbf16>, tensor<1x2x8x4xbf16>) outs(%io : tensor<1x2x8x4xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %aw = arith.extf %a : bf16 to f32
    %bw = arith.extf %b : bf16 to f32
    %m = arith.mulf %aw, %bw : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x4xf32>
  func.return %o : tensor<1x2x8x4xf32>
}

// -----

// Near miss: P V multiplies and accumulates in bf16 (a different program: its sum
// is rounded at every step). Moving p's rounding onto e would also move the
// division out of a bf16 sum: not rewritten.
// CHECK-LABEL: func.func @pv_accumulates_in_bf16
// CHECK-NOT:   tilefuse.attention
// CHECK:       func.return
#qk = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
#kk = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>
#vv = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>
#o5 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#row = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
func.func @pv_accumulates_in_bf16(%q: tensor<1x2x8x4xbf16>, %k: tensor<1x2x8x4xbf16>, %v: tensor<1x2x8x4xbf16>) -> tensor<1x2x8x4xbf16> {
  %zero = arith.constant 0.000000e+00 : f32
  %zero16 = arith.constant 0.000000e+00 : bf16
  %ninf = arith.constant 0xff800000 : f32
  %es = tensor.empty() : tensor<1x2x8x8xf32>
  %es16 = tensor.empty() : tensor<1x2x8x8xbf16>
  %is = linalg.fill ins(%zero : f32) outs(%es : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %s = linalg.generic {indexing_maps = [#qk, #kk, #o5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<1x2x8x4xbf16>, tensor<1x2x8x4xbf16>) outs(%is : tensor<1x2x8x8xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %aw = arith.extf %a : bf16 to f32
    %bw = arith.extf %b : bf16 to f32
    %m = arith.mulf %aw, %bw : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %s16 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<1x2x8x8xf32>) outs(%es16 : tensor<1x2x8x8xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %r = arith.truncf %a : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<1x2x8x8xbf16>
  %u = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s16 : tensor<1x2x8x8xbf16>) outs(%es : tensor<1x2x8x8xf32>) {
  ^bb0(%a: bf16, %o: f32):
    %r = arith.extf %a : bf16 to f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %er = tensor.empty() : tensor<1x2x8xf32>
  %im = linalg.fill ins(%ninf : f32) outs(%er : tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  %mx = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%u : tensor<1x2x8x8xf32>) outs(%im : tensor<1x2x8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8xf32>
  %ex = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%u, %mx : tensor<1x2x8x8xf32>, tensor<1x2x8xf32>) outs(%es : tensor<1x2x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %iz = linalg.fill ins(%zero : f32) outs(%er : tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  %l = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<1x2x8x8xf32>) outs(%iz : tensor<1x2x8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8xf32>
  %p = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %l : tensor<1x2x8x8xf32>, tensor<1x2x8xf32>) outs(%es : tensor<1x2x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %p16 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%p : tensor<1x2x8x8xf32>) outs(%es16 : tensor<1x2x8x8xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %r = arith.truncf %a : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<1x2x8x8xbf16>
  %eo = tensor.empty() : tensor<1x2x8x4xbf16>
  %io = linalg.fill ins(%zero16 : bf16) outs(%eo : tensor<1x2x8x4xbf16>) -> tensor<1x2x8x4xbf16>
  %o = linalg.generic {indexing_maps = [#qk, #vv, #o5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p16, %v : tensor<1x2x8x8xbf16>, tensor<1x2x8x4xbf16>) outs(%io : tensor<1x2x8x4xbf16>) {
  ^bb0(%a: bf16, %b: bf16, %acc: bf16):
    %m = arith.mulf %a, %b : bf16
    %r = arith.addf %acc, %m : bf16
    linalg.yield %r : bf16
  } -> tensor<1x2x8x4xbf16>
  func.return %o : tensor<1x2x8x4xbf16>
}

// -----

// The same, heads through views as torch-mlir writes them in bf16 (ViT's scale a
// mul after Q K^T): each batch matmul's result is read through its truncf (and the
// scale) before the expand_shape. The contractions and those casts run over (b, h)
// (fusion by expansion through elementwise ops of one input), no view is left, and
// the attention matches.
// CHECK-LABEL: func.func @heads_through_the_dots_truncf
// CHECK-NOT:   tensor.collapse_shape
// CHECK-NOT:   tensor.expand_shape
// CHECK:       %s3 = linalg.generic {{.*}} ins(%q, %k : tensor<1x2x8x4xbf16>, tensor<1x2x8x4xbf16>) outs({{.*}} : tensor<1x2x8x8xf32>) attrs = {tilefuse.attention = "attention_0"}
// CHECK:       %t3 = linalg.generic {{.*}} ins(%s3 : tensor<1x2x8x8xf32>) outs({{.*}} : tensor<1x2x8x8xbf16>) attrs = {tilefuse.attention = "attention_0"}
// CHECK:       %sc3 = linalg.generic {{.*}} attrs = {tilefuse.attention = "attention_0"}
// CHECK:       %[[O:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %v : tensor<1x2x8x8xbf16>, tensor<1x2x8x4xbf16>) {{.*}} attrs = {tilefuse.attention = "attention_0"}
// CHECK:       %[[Y:.*]] = linalg.generic {{.*}} ins(%[[O]], %l : {{.*}}) {{.*}} attrs = {tilefuse.attention = "attention_0"}
// CHECK:       %[[T:.*]] = linalg.generic {{.*}} ins(%[[Y]] : tensor<1x2x8x4xf32>) outs({{.*}} : tensor<1x2x8x4xbf16>)
// CHECK:       func.return %[[T]] : tensor<1x2x8x4xbf16>
#a3 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#b3 = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
#v3 = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
#c3 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#i3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#row = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
func.func @heads_through_the_dots_truncf(%q: tensor<1x2x8x4xbf16>, %k: tensor<1x2x8x4xbf16>, %v: tensor<1x2x8x4xbf16>) -> tensor<1x2x8x4xbf16> {
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xff800000 : f32
  %scale = arith.constant 5.000000e-01 : bf16
  %qc = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<1x2x8x4xbf16> into tensor<2x8x4xbf16>
  %kc = tensor.collapse_shape %k [[0, 1], [2], [3]] : tensor<1x2x8x4xbf16> into tensor<2x8x4xbf16>
  %es3 = tensor.empty() : tensor<2x8x8xf32>
  %es316 = tensor.empty() : tensor<2x8x8xbf16>
  %is3 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%es3 : tensor<2x8x8xf32>) {
  ^bb0(%fa: f32, %fb: f32):
    linalg.yield %fa : f32
  } -> tensor<2x8x8xf32>
  %s3 = linalg.generic {indexing_maps = [#a3, #b3, #c3], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%qc, %kc : tensor<2x8x4xbf16>, tensor<2x8x4xbf16>) outs(%is3 : tensor<2x8x8xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %aw = arith.extf %a : bf16 to f32
    %bw = arith.extf %b : bf16 to f32
    %m = arith.mulf %aw, %bw : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x8x8xf32>
  %t3 = linalg.generic {indexing_maps = [#i3, #i3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s3 : tensor<2x8x8xf32>) outs(%es316 : tensor<2x8x8xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %r = arith.truncf %a : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<2x8x8xbf16>
  %sc3 = linalg.generic {indexing_maps = [#i3, #i3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%t3 : tensor<2x8x8xbf16>) outs(%es316 : tensor<2x8x8xbf16>) {
  ^bb0(%a: bf16, %o: bf16):
    %r = arith.mulf %a, %scale : bf16
    linalg.yield %r : bf16
  } -> tensor<2x8x8xbf16>
  %s16 = tensor.expand_shape %sc3 [[0, 1], [2], [3]] output_shape [1, 2, 8, 8] : tensor<2x8x8xbf16> into tensor<1x2x8x8xbf16>
  %es = tensor.empty() : tensor<1x2x8x8xf32>
  %es16 = tensor.empty() : tensor<1x2x8x8xbf16>
  %u = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s16 : tensor<1x2x8x8xbf16>) outs(%es : tensor<1x2x8x8xf32>) {
  ^bb0(%a: bf16, %o: f32):
    %r = arith.extf %a : bf16 to f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %er = tensor.empty() : tensor<1x2x8xf32>
  %im = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ninf : f32) outs(%er : tensor<1x2x8xf32>) {
  ^bb0(%fa: f32, %fb: f32):
    linalg.yield %fa : f32
  } -> tensor<1x2x8xf32>
  %mx = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%u : tensor<1x2x8x8xf32>) outs(%im : tensor<1x2x8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8xf32>
  %ex = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%u, %mx : tensor<1x2x8x8xf32>, tensor<1x2x8xf32>) outs(%es : tensor<1x2x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %iz = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%er : tensor<1x2x8xf32>) {
  ^bb0(%fa: f32, %fb: f32):
    linalg.yield %fa : f32
  } -> tensor<1x2x8xf32>
  %l = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<1x2x8x8xf32>) outs(%iz : tensor<1x2x8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8xf32>
  %p = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %l : tensor<1x2x8x8xf32>, tensor<1x2x8xf32>) outs(%es : tensor<1x2x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %p16 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%p : tensor<1x2x8x8xf32>) outs(%es16 : tensor<1x2x8x8xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %r = arith.truncf %a : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<1x2x8x8xbf16>
  %pc = tensor.collapse_shape %p16 [[0, 1], [2], [3]] : tensor<1x2x8x8xbf16> into tensor<2x8x8xbf16>
  %vc = tensor.collapse_shape %v [[0, 1], [2], [3]] : tensor<1x2x8x4xbf16> into tensor<2x8x4xbf16>
  %eo3 = tensor.empty() : tensor<2x8x4xf32>
  %eo316 = tensor.empty() : tensor<2x8x4xbf16>
  %io3 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%eo3 : tensor<2x8x4xf32>) {
  ^bb0(%fa: f32, %fb: f32):
    linalg.yield %fa : f32
  } -> tensor<2x8x4xf32>
  %o3 = linalg.generic {indexing_maps = [#a3, #v3, #c3], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%pc, %vc : tensor<2x8x8xbf16>, tensor<2x8x4xbf16>) outs(%io3 : tensor<2x8x4xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %aw = arith.extf %a : bf16 to f32
    %bw = arith.extf %b : bf16 to f32
    %m = arith.mulf %aw, %bw : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x8x4xf32>
  %ot3 = linalg.generic {indexing_maps = [#i3, #i3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%o3 : tensor<2x8x4xf32>) outs(%eo316 : tensor<2x8x4xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %r = arith.truncf %a : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<2x8x4xbf16>
  %out = tensor.expand_shape %ot3 [[0, 1], [2], [3]] output_shape [1, 2, 8, 4] : tensor<2x8x4xbf16> into tensor<1x2x8x4xbf16>
  func.return %out : tensor<1x2x8x4xbf16>
}

// -----

// nanoGPT's attention in bf16 as torch-mlir leaves it: the scores, the softmax and
// P V over B*H (only P V's result, through its truncf, is expanded back). The
// probabilities' producers are expanded with P V, back to the scores' contraction,
// whose operands' collapses are undone: the attention runs over (b, h), no view left.
// CHECK-LABEL: func.func @softmax_over_batch_heads
// CHECK-NOT:   tensor.collapse_shape
// CHECK-NOT:   tensor.expand_shape
// CHECK:       %s3 = linalg.generic {{.*}} ins(%q, %k : tensor<1x2x8x4xbf16>, tensor<1x2x8x4xbf16>) outs({{.*}} : tensor<1x2x8x8xf32>) attrs = {tilefuse.attention = "attention_0"}
// CHECK:       %mx = linalg.generic {{.*}} outs({{.*}} : tensor<1x2x8xf32>) attrs = {tilefuse.attention = "attention_0"}
// CHECK:       %[[O:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %v : tensor<1x2x8x8xbf16>, tensor<1x2x8x4xbf16>) {{.*}} attrs = {tilefuse.attention = "attention_0"}
// CHECK:       %[[Y:.*]] = linalg.generic {{.*}} ins(%[[O]], %l : {{.*}}) {{.*}} attrs = {tilefuse.attention = "attention_0"}
// CHECK:       %[[T:.*]] = linalg.generic {{.*}} ins(%[[Y]] : tensor<1x2x8x4xf32>) outs({{.*}} : tensor<1x2x8x4xbf16>)
// CHECK:       func.return %[[T]] : tensor<1x2x8x4xbf16>
#a3 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#b3 = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
#v3 = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
#c3 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#i3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#r3 = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @softmax_over_batch_heads(%q: tensor<1x2x8x4xbf16>, %k: tensor<1x2x8x4xbf16>, %v: tensor<1x2x8x4xbf16>) -> tensor<1x2x8x4xbf16> {
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xff800000 : f32
  %scale = arith.constant 5.000000e-01 : bf16
  %qc = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<1x2x8x4xbf16> into tensor<2x8x4xbf16>
  %kc = tensor.collapse_shape %k [[0, 1], [2], [3]] : tensor<1x2x8x4xbf16> into tensor<2x8x4xbf16>
  %es3 = tensor.empty() : tensor<2x8x8xf32>
  %es316 = tensor.empty() : tensor<2x8x8xbf16>
  %is3 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%es3 : tensor<2x8x8xf32>) {
  ^bb0(%fa: f32, %fb: f32):
    linalg.yield %fa : f32
  } -> tensor<2x8x8xf32>
  %s3 = linalg.generic {indexing_maps = [#a3, #b3, #c3], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%qc, %kc : tensor<2x8x4xbf16>, tensor<2x8x4xbf16>) outs(%is3 : tensor<2x8x8xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %aw = arith.extf %a : bf16 to f32
    %bw = arith.extf %b : bf16 to f32
    %m = arith.mulf %aw, %bw : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x8x8xf32>
  %t3 = linalg.generic {indexing_maps = [#i3, #i3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s3 : tensor<2x8x8xf32>) outs(%es316 : tensor<2x8x8xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %r = arith.truncf %a : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<2x8x8xbf16>
  %sc3 = linalg.generic {indexing_maps = [#i3, #i3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%t3 : tensor<2x8x8xbf16>) outs(%es316 : tensor<2x8x8xbf16>) {
  ^bb0(%a: bf16, %o: bf16):
    %r = arith.mulf %a, %scale : bf16
    linalg.yield %r : bf16
  } -> tensor<2x8x8xbf16>
  %es = tensor.empty() : tensor<2x8x8xf32>
  %es16 = tensor.empty() : tensor<2x8x8xbf16>
  %u = linalg.generic {indexing_maps = [#i3, #i3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%sc3 : tensor<2x8x8xbf16>) outs(%es : tensor<2x8x8xf32>) {
  ^bb0(%a: bf16, %o: f32):
    %r = arith.extf %a : bf16 to f32
    linalg.yield %r : f32
  } -> tensor<2x8x8xf32>
  %er = tensor.empty() : tensor<2x8xf32>
  %im = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%ninf : f32) outs(%er : tensor<2x8xf32>) {
  ^bb0(%fa: f32, %fb: f32):
    linalg.yield %fa : f32
  } -> tensor<2x8xf32>
  %mx = linalg.generic {indexing_maps = [#i3, #r3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%u : tensor<2x8x8xf32>) outs(%im : tensor<2x8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<2x8xf32>
  %ex = linalg.generic {indexing_maps = [#i3, #r3, #i3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%u, %mx : tensor<2x8x8xf32>, tensor<2x8xf32>) outs(%es : tensor<2x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<2x8x8xf32>
  %iz = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%zero : f32) outs(%er : tensor<2x8xf32>) {
  ^bb0(%fa: f32, %fb: f32):
    linalg.yield %fa : f32
  } -> tensor<2x8xf32>
  %l = linalg.generic {indexing_maps = [#i3, #r3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%ex : tensor<2x8x8xf32>) outs(%iz : tensor<2x8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<2x8xf32>
  %p = linalg.generic {indexing_maps = [#i3, #r3, #i3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ex, %l : tensor<2x8x8xf32>, tensor<2x8xf32>) outs(%es : tensor<2x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x8x8xf32>
  %p16 = linalg.generic {indexing_maps = [#i3, #i3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%p : tensor<2x8x8xf32>) outs(%es16 : tensor<2x8x8xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %r = arith.truncf %a : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<2x8x8xbf16>
  %vc = tensor.collapse_shape %v [[0, 1], [2], [3]] : tensor<1x2x8x4xbf16> into tensor<2x8x4xbf16>
  %eo3 = tensor.empty() : tensor<2x8x4xf32>
  %eo316 = tensor.empty() : tensor<2x8x4xbf16>
  %io3 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%eo3 : tensor<2x8x4xf32>) {
  ^bb0(%fa: f32, %fb: f32):
    linalg.yield %fa : f32
  } -> tensor<2x8x4xf32>
  %o3 = linalg.generic {indexing_maps = [#a3, #v3, #c3], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%p16, %vc : tensor<2x8x8xbf16>, tensor<2x8x4xbf16>) outs(%io3 : tensor<2x8x4xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %aw = arith.extf %a : bf16 to f32
    %bw = arith.extf %b : bf16 to f32
    %m = arith.mulf %aw, %bw : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x8x4xf32>
  %ot3 = linalg.generic {indexing_maps = [#i3, #i3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%o3 : tensor<2x8x4xf32>) outs(%eo316 : tensor<2x8x4xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %r = arith.truncf %a : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<2x8x4xbf16>
  %out = tensor.expand_shape %ot3 [[0, 1], [2], [3]] output_shape [1, 2, 8, 4] : tensor<2x8x4xbf16> into tensor<1x2x8x4xbf16>
  func.return %out : tensor<1x2x8x4xbf16>
}

// -----

// The same with nanoGPT's K: transposed by a copy of [b, t, h*d], then split into
// heads by an expand_shape. The scores read a view of K split into heads, through
// the copy's permutation: the copy is not read any more.
// CHECK-LABEL: func.func @k_transposed_then_split_into_heads
// CHECK-NOT:   tensor.collapse_shape
// CHECK-NOT:   %kt =
// CHECK:       %[[K:.*]] = tensor.expand_shape %k {{\[}}[0 : i64], [1 : i64], [2 : i64, 3 : i64]] output_shape [1, 8, 2, 4] : tensor<1x8x8xbf16> into tensor<1x8x2x4xbf16>
// CHECK:       %s3 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d3, d1, d4)>, {{.*}} ins(%q, %[[K]] : tensor<1x2x8x4xbf16>, tensor<1x8x2x4xbf16>) outs({{.*}} : tensor<1x2x8x8xf32>) attrs = {tilefuse.attention = "attention_0"}
// CHECK:       %mx = linalg.generic {{.*}} outs({{.*}} : tensor<1x2x8xf32>) attrs = {tilefuse.attention = "attention_0"}
// CHECK:       %[[O:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %v : tensor<1x2x8x8xbf16>, tensor<1x2x8x4xbf16>) {{.*}} attrs = {tilefuse.attention = "attention_0"}
// CHECK:       %[[Y:.*]] = linalg.generic {{.*}} ins(%[[O]], %l : {{.*}}) {{.*}} attrs = {tilefuse.attention = "attention_0"}
// CHECK:       %[[T:.*]] = linalg.generic {{.*}} ins(%[[Y]] : tensor<1x2x8x4xf32>) outs({{.*}} : tensor<1x2x8x4xbf16>)
// CHECK:       func.return %[[T]] : tensor<1x2x8x4xbf16>
#a3 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#b3 = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
#v3 = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
#c3 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#i3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#r3 = affine_map<(d0, d1, d2) -> (d0, d1)>
#kt3 = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
func.func @k_transposed_then_split_into_heads(%q: tensor<1x2x8x4xbf16>, %k: tensor<1x8x8xbf16>, %v: tensor<1x2x8x4xbf16>) -> tensor<1x2x8x4xbf16> {
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xff800000 : f32
  %scale = arith.constant 5.000000e-01 : bf16
  %qc = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<1x2x8x4xbf16> into tensor<2x8x4xbf16>
  %kt_empty = tensor.empty() : tensor<1x8x8xbf16>
  %kt = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2, d1)>, #i3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%k : tensor<1x8x8xbf16>) outs(%kt_empty : tensor<1x8x8xbf16>) {
  ^bb0(%x: bf16, %o: bf16):
    linalg.yield %x : bf16
  } -> tensor<1x8x8xbf16>
  %kh = tensor.expand_shape %kt [[0], [1, 2], [3]] output_shape [1, 2, 4, 8] : tensor<1x8x8xbf16> into tensor<1x2x4x8xbf16>
  %kc = tensor.collapse_shape %kh [[0, 1], [2], [3]] : tensor<1x2x4x8xbf16> into tensor<2x4x8xbf16>
  %es3 = tensor.empty() : tensor<2x8x8xf32>
  %es316 = tensor.empty() : tensor<2x8x8xbf16>
  %is3 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%es3 : tensor<2x8x8xf32>) {
  ^bb0(%fa: f32, %fb: f32):
    linalg.yield %fa : f32
  } -> tensor<2x8x8xf32>
  %s3 = linalg.generic {indexing_maps = [#a3, #kt3, #c3], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%qc, %kc : tensor<2x8x4xbf16>, tensor<2x4x8xbf16>) outs(%is3 : tensor<2x8x8xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %aw = arith.extf %a : bf16 to f32
    %bw = arith.extf %b : bf16 to f32
    %m = arith.mulf %aw, %bw : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x8x8xf32>
  %t3 = linalg.generic {indexing_maps = [#i3, #i3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s3 : tensor<2x8x8xf32>) outs(%es316 : tensor<2x8x8xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %r = arith.truncf %a : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<2x8x8xbf16>
  %sc3 = linalg.generic {indexing_maps = [#i3, #i3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%t3 : tensor<2x8x8xbf16>) outs(%es316 : tensor<2x8x8xbf16>) {
  ^bb0(%a: bf16, %o: bf16):
    %r = arith.mulf %a, %scale : bf16
    linalg.yield %r : bf16
  } -> tensor<2x8x8xbf16>
  %es = tensor.empty() : tensor<2x8x8xf32>
  %es16 = tensor.empty() : tensor<2x8x8xbf16>
  %u = linalg.generic {indexing_maps = [#i3, #i3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%sc3 : tensor<2x8x8xbf16>) outs(%es : tensor<2x8x8xf32>) {
  ^bb0(%a: bf16, %o: f32):
    %r = arith.extf %a : bf16 to f32
    linalg.yield %r : f32
  } -> tensor<2x8x8xf32>
  %er = tensor.empty() : tensor<2x8xf32>
  %im = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%ninf : f32) outs(%er : tensor<2x8xf32>) {
  ^bb0(%fa: f32, %fb: f32):
    linalg.yield %fa : f32
  } -> tensor<2x8xf32>
  %mx = linalg.generic {indexing_maps = [#i3, #r3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%u : tensor<2x8x8xf32>) outs(%im : tensor<2x8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<2x8xf32>
  %ex = linalg.generic {indexing_maps = [#i3, #r3, #i3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%u, %mx : tensor<2x8x8xf32>, tensor<2x8xf32>) outs(%es : tensor<2x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<2x8x8xf32>
  %iz = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%zero : f32) outs(%er : tensor<2x8xf32>) {
  ^bb0(%fa: f32, %fb: f32):
    linalg.yield %fa : f32
  } -> tensor<2x8xf32>
  %l = linalg.generic {indexing_maps = [#i3, #r3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%ex : tensor<2x8x8xf32>) outs(%iz : tensor<2x8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<2x8xf32>
  %p = linalg.generic {indexing_maps = [#i3, #r3, #i3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ex, %l : tensor<2x8x8xf32>, tensor<2x8xf32>) outs(%es : tensor<2x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x8x8xf32>
  %p16 = linalg.generic {indexing_maps = [#i3, #i3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%p : tensor<2x8x8xf32>) outs(%es16 : tensor<2x8x8xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %r = arith.truncf %a : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<2x8x8xbf16>
  %vc = tensor.collapse_shape %v [[0, 1], [2], [3]] : tensor<1x2x8x4xbf16> into tensor<2x8x4xbf16>
  %eo3 = tensor.empty() : tensor<2x8x4xf32>
  %eo316 = tensor.empty() : tensor<2x8x4xbf16>
  %io3 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%eo3 : tensor<2x8x4xf32>) {
  ^bb0(%fa: f32, %fb: f32):
    linalg.yield %fa : f32
  } -> tensor<2x8x4xf32>
  %o3 = linalg.generic {indexing_maps = [#a3, #v3, #c3], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%p16, %vc : tensor<2x8x8xbf16>, tensor<2x8x4xbf16>) outs(%io3 : tensor<2x8x4xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %aw = arith.extf %a : bf16 to f32
    %bw = arith.extf %b : bf16 to f32
    %m = arith.mulf %aw, %bw : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x8x4xf32>
  %ot3 = linalg.generic {indexing_maps = [#i3, #i3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%o3 : tensor<2x8x4xf32>) outs(%eo316 : tensor<2x8x4xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %r = arith.truncf %a : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<2x8x4xbf16>
  %out = tensor.expand_shape %ot3 [[0, 1], [2], [3]] output_shape [1, 2, 8, 4] : tensor<2x8x4xbf16> into tensor<1x2x8x4xbf16>
  func.return %out : tensor<1x2x8x4xbf16>
}

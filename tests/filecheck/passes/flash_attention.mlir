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

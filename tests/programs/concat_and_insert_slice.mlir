// torch.cat as tensor.concat (of kernel results and argument views) and as torch-mlir's
// older insert_slice chain into a tensor.empty; an insert into a filled buffer (padding)
// and a strided, rank-reducing insert. The host builds the inserts (slice assignment)
// between the kernels that make their operands and those that read them; the concat,
// read only by a generic, is computed inside its reader (fold-concats).
#m = affine_map<(d0, d1) -> (d0, d1)>
func.func @cats(%x: tensor<8x64xf32>, %c: tensor<8x64xf32>, %r: tensor<64xf32>) -> (tensor<8x64xf32>, tensor<16x64xf32>, tensor<10x64xf32>, tensor<8x64xf32>) {
  %x1 = tensor.extract_slice %x[0, 0] [8, 32] [1, 1] : tensor<8x64xf32> to tensor<8x32xf32>
  %x2 = tensor.extract_slice %x[0, 32] [8, 32] [1, 1] : tensor<8x64xf32> to tensor<8x32xf32>
  %e = tensor.empty() : tensor<8x32xf32>
  %n = linalg.negf ins(%x2 : tensor<8x32xf32>) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %rot = tensor.concat dim(1) %n, %x1 : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x64xf32>
  %e2 = tensor.empty() : tensor<8x64xf32>
  %y = linalg.generic {indexing_maps = [#m, #m, #m, #m], iterator_types = ["parallel", "parallel"]} ins(%x, %rot, %c : tensor<8x64xf32>, tensor<8x64xf32>, tensor<8x64xf32>) outs(%e2 : tensor<8x64xf32>) {
  ^bb0(%a: f32, %b: f32, %k: f32, %o: f32):
    %p = arith.mulf %b, %k : f32
    %s = arith.addf %a, %p : f32
    linalg.yield %s : f32
  } -> tensor<8x64xf32>
  %ex = linalg.exp ins(%y : tensor<8x64xf32>) outs(%e2 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %e16 = tensor.empty() : tensor<16x64xf32>
  %i0 = tensor.insert_slice %y into %e16[0, 0] [8, 64] [1, 1] : tensor<8x64xf32> into tensor<16x64xf32>
  %stack = tensor.insert_slice %ex into %i0[8, 0] [8, 64] [1, 1] : tensor<8x64xf32> into tensor<16x64xf32>
  %zero = arith.constant 0.0 : f32
  %e10 = tensor.empty() : tensor<10x64xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e10 : tensor<10x64xf32>) -> tensor<10x64xf32>
  %pad = tensor.insert_slice %y into %z[1, 0] [8, 64] [1, 1] : tensor<8x64xf32> into tensor<10x64xf32>
  %every = tensor.insert_slice %r into %y[2, 0] [1, 64] [3, 1] : tensor<64xf32> into tensor<8x64xf32>
  %t = linalg.tanh ins(%every : tensor<8x64xf32>) outs(%e2 : tensor<8x64xf32>) -> tensor<8x64xf32>
  return %y, %stack, %pad, %t : tensor<8x64xf32>, tensor<16x64xf32>, tensor<10x64xf32>, tensor<8x64xf32>
}

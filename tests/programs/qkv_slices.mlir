// One projection for Q, K and V, split by static tensor.extract_slice (host views,
// strided), then attention on the slices: still one FlashAttention kernel.
func.func @qkv(%x: tensor<64x32xf32>, %w: tensor<32x96xf32>) -> tensor<64x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x96xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<64x96xf32>) -> tensor<64x96xf32>
  %qkv = linalg.matmul ins(%x, %w : tensor<64x32xf32>, tensor<32x96xf32>) outs(%i : tensor<64x96xf32>) -> tensor<64x96xf32>
  %q = tensor.extract_slice %qkv[0, 0] [64, 32] [1, 1] : tensor<64x96xf32> to tensor<64x32xf32>
  %k = tensor.extract_slice %qkv[0, 32] [64, 32] [1, 1] : tensor<64x96xf32> to tensor<64x32xf32>
  %v = tensor.extract_slice %qkv[0, 64] [64, 32] [1, 1] : tensor<64x96xf32> to tensor<64x32xf32>
  %es = tensor.empty() : tensor<64x64xf32>
  %is = linalg.fill ins(%zero : f32) outs(%es : tensor<64x64xf32>) -> tensor<64x64xf32>
  %s = linalg.matmul_transpose_b ins(%q, %k : tensor<64x32xf32>, tensor<64x32xf32>) outs(%is : tensor<64x64xf32>) -> tensor<64x64xf32>
  %p = linalg.softmax dimension(1) ins(%s : tensor<64x64xf32>) outs(%es : tensor<64x64xf32>) -> tensor<64x64xf32>
  %eo = tensor.empty() : tensor<64x32xf32>
  %io = linalg.fill ins(%zero : f32) outs(%eo : tensor<64x32xf32>) -> tensor<64x32xf32>
  %o = linalg.matmul ins(%p, %v : tensor<64x64xf32>, tensor<64x32xf32>) outs(%io : tensor<64x32xf32>) -> tensor<64x32xf32>
  func.return %o : tensor<64x32xf32>
}

// Q, K and V projections of one activation x [T, 128] (bf16): one tile program over x's
// rows three times (stacked into one launch per variant level: horizontal fusion)
func.func @qkv(%x: tensor<?x128xbf16>, %wq: tensor<128x512xbf16>, %wk: tensor<128x512xbf16>, %wv: tensor<128x512xbf16>) -> (tensor<?x512xbf16>, tensor<?x512xbf16>, tensor<?x512xbf16>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x128xbf16>
  %z = arith.constant 0.0 : bf16
  %e = tensor.empty(%n) : tensor<?x512xbf16>
  %f = linalg.fill ins(%z : bf16) outs(%e : tensor<?x512xbf16>) -> tensor<?x512xbf16>
  %q = linalg.matmul ins(%x, %wq : tensor<?x128xbf16>, tensor<128x512xbf16>) outs(%f : tensor<?x512xbf16>) -> tensor<?x512xbf16>
  %k = linalg.matmul ins(%x, %wk : tensor<?x128xbf16>, tensor<128x512xbf16>) outs(%f : tensor<?x512xbf16>) -> tensor<?x512xbf16>
  %v = linalg.matmul ins(%x, %wv : tensor<?x128xbf16>, tensor<128x512xbf16>) outs(%f : tensor<?x512xbf16>) -> tensor<?x512xbf16>
  return %q, %k, %v : tensor<?x512xbf16>, tensor<?x512xbf16>, tensor<?x512xbf16>
}

module {
  func.func @llama(%arg0: tensor<2x2xi32> {mt.input = "tokens"}, %arg1: tensor<2x2xi32> {mt.input = "labels"}, %arg2: tensor<8x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "vocab"}, mt.param = "model.embed_tokens.weight"}, %arg3: tensor<4xf32> {mt.init = {kind = "ones"}, mt.parallel = {role = "replicated"}, mt.param = "model.layers.0.input_layernorm.weight"}, %arg4: tensor<4x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.0.self_attn.q_proj.weight"}, %arg5: tensor<4x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.0.self_attn.k_proj.weight"}, %arg6: tensor<4x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.0.self_attn.v_proj.weight"}, %arg7: tensor<4x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 1 : i64, role = "row"}, mt.param = "model.layers.0.self_attn.o_proj.weight"}, %arg8: tensor<4xf32> {mt.init = {kind = "ones"}, mt.parallel = {role = "replicated"}, mt.param = "model.layers.0.post_attention_layernorm.weight"}, %arg9: tensor<8x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.0.mlp.gate_proj.weight"}, %arg10: tensor<8x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.0.mlp.up_proj.weight"}, %arg11: tensor<4x8xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 1 : i64, role = "row"}, mt.param = "model.layers.0.mlp.down_proj.weight"}, %arg12: tensor<4xf32> {mt.init = {kind = "ones"}, mt.parallel = {role = "replicated"}, mt.param = "model.layers.1.input_layernorm.weight"}, %arg13: tensor<4x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.1.self_attn.q_proj.weight"}, %arg14: tensor<4x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.1.self_attn.k_proj.weight"}, %arg15: tensor<4x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.1.self_attn.v_proj.weight"}, %arg16: tensor<4x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 1 : i64, role = "row"}, mt.param = "model.layers.1.self_attn.o_proj.weight"}, %arg17: tensor<4xf32> {mt.init = {kind = "ones"}, mt.parallel = {role = "replicated"}, mt.param = "model.layers.1.post_attention_layernorm.weight"}, %arg18: tensor<8x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.1.mlp.gate_proj.weight"}, %arg19: tensor<8x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.1.mlp.up_proj.weight"}, %arg20: tensor<4x8xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 1 : i64, role = "row"}, mt.param = "model.layers.1.mlp.down_proj.weight"}, %arg21: tensor<4xf32> {mt.init = {kind = "ones"}, mt.parallel = {role = "replicated"}, mt.param = "model.norm.weight"}) -> (tensor<f32> {mt.output = "loss"}) {
    %0 = mt.embedding %arg2, %arg0 : (tensor<8x4xf32>, tensor<2x2xi32>) -> tensor<2x2x4xf32>
    %1 = mt.rms_norm %0, %arg3 {mt.layer = 0 : i64} : tensor<2x2x4xf32>, tensor<4xf32>
    %2 = mt.matmul %1, %arg4 transpose_b {mt.layer = 0 : i64} : (tensor<2x2x4xf32>, tensor<4x4xf32>) -> tensor<2x2x4xf32>
    %3 = mt.split_heads %2 {mt.layer = 0 : i64} : tensor<2x2x4xf32> -> tensor<2x2x2x2xf32>
    %4 = mt.rope %3 {mt.layer = 0 : i64} : tensor<2x2x2x2xf32>
    %5 = mt.matmul %1, %arg5 transpose_b {mt.layer = 0 : i64} : (tensor<2x2x4xf32>, tensor<4x4xf32>) -> tensor<2x2x4xf32>
    %6 = mt.split_heads %5 {mt.layer = 0 : i64} : tensor<2x2x4xf32> -> tensor<2x2x2x2xf32>
    %7 = mt.rope %6 {mt.layer = 0 : i64} : tensor<2x2x2x2xf32>
    %8 = mt.matmul %1, %arg6 transpose_b {mt.layer = 0 : i64} : (tensor<2x2x4xf32>, tensor<4x4xf32>) -> tensor<2x2x4xf32>
    %9 = mt.split_heads %8 {mt.layer = 0 : i64} : tensor<2x2x4xf32> -> tensor<2x2x2x2xf32>
    %10 = mt.attention %4, %7, %9 {mt.layer = 0 : i64} : tensor<2x2x2x2xf32>
    %11 = mt.merge_heads %10 {mt.layer = 0 : i64} : tensor<2x2x2x2xf32> -> tensor<2x2x4xf32>
    %12 = mt.matmul %11, %arg7 transpose_b {mt.layer = 0 : i64} : (tensor<2x2x4xf32>, tensor<4x4xf32>) -> tensor<2x2x4xf32>
    %13 = mt.add %0, %12 {mt.layer = 0 : i64} : tensor<2x2x4xf32>
    %14 = mt.rms_norm %13, %arg8 {mt.layer = 0 : i64} : tensor<2x2x4xf32>, tensor<4xf32>
    %15 = mt.matmul %14, %arg9 transpose_b {mt.layer = 0 : i64} : (tensor<2x2x4xf32>, tensor<8x4xf32>) -> tensor<2x2x8xf32>
    %16 = mt.matmul %14, %arg10 transpose_b {mt.layer = 0 : i64} : (tensor<2x2x4xf32>, tensor<8x4xf32>) -> tensor<2x2x8xf32>
    %17 = mt.silu %15 {mt.layer = 0 : i64} : tensor<2x2x8xf32>
    %18 = mt.mul %17, %16 {mt.layer = 0 : i64} : tensor<2x2x8xf32>
    %19 = mt.matmul %18, %arg11 transpose_b {mt.layer = 0 : i64} : (tensor<2x2x8xf32>, tensor<4x8xf32>) -> tensor<2x2x4xf32>
    %20 = mt.add %13, %19 {mt.layer = 0 : i64} : tensor<2x2x4xf32>
    %21 = mt.rms_norm %20, %arg12 {mt.layer = 1 : i64} : tensor<2x2x4xf32>, tensor<4xf32>
    %22 = mt.matmul %21, %arg13 transpose_b {mt.layer = 1 : i64} : (tensor<2x2x4xf32>, tensor<4x4xf32>) -> tensor<2x2x4xf32>
    %23 = mt.split_heads %22 {mt.layer = 1 : i64} : tensor<2x2x4xf32> -> tensor<2x2x2x2xf32>
    %24 = mt.rope %23 {mt.layer = 1 : i64} : tensor<2x2x2x2xf32>
    %25 = mt.matmul %21, %arg14 transpose_b {mt.layer = 1 : i64} : (tensor<2x2x4xf32>, tensor<4x4xf32>) -> tensor<2x2x4xf32>
    %26 = mt.split_heads %25 {mt.layer = 1 : i64} : tensor<2x2x4xf32> -> tensor<2x2x2x2xf32>
    %27 = mt.rope %26 {mt.layer = 1 : i64} : tensor<2x2x2x2xf32>
    %28 = mt.matmul %21, %arg15 transpose_b {mt.layer = 1 : i64} : (tensor<2x2x4xf32>, tensor<4x4xf32>) -> tensor<2x2x4xf32>
    %29 = mt.split_heads %28 {mt.layer = 1 : i64} : tensor<2x2x4xf32> -> tensor<2x2x2x2xf32>
    %30 = mt.attention %24, %27, %29 {mt.layer = 1 : i64} : tensor<2x2x2x2xf32>
    %31 = mt.merge_heads %30 {mt.layer = 1 : i64} : tensor<2x2x2x2xf32> -> tensor<2x2x4xf32>
    %32 = mt.matmul %31, %arg16 transpose_b {mt.layer = 1 : i64} : (tensor<2x2x4xf32>, tensor<4x4xf32>) -> tensor<2x2x4xf32>
    %33 = mt.add %20, %32 {mt.layer = 1 : i64} : tensor<2x2x4xf32>
    %34 = mt.rms_norm %33, %arg17 {mt.layer = 1 : i64} : tensor<2x2x4xf32>, tensor<4xf32>
    %35 = mt.matmul %34, %arg18 transpose_b {mt.layer = 1 : i64} : (tensor<2x2x4xf32>, tensor<8x4xf32>) -> tensor<2x2x8xf32>
    %36 = mt.matmul %34, %arg19 transpose_b {mt.layer = 1 : i64} : (tensor<2x2x4xf32>, tensor<8x4xf32>) -> tensor<2x2x8xf32>
    %37 = mt.silu %35 {mt.layer = 1 : i64} : tensor<2x2x8xf32>
    %38 = mt.mul %37, %36 {mt.layer = 1 : i64} : tensor<2x2x8xf32>
    %39 = mt.matmul %38, %arg20 transpose_b {mt.layer = 1 : i64} : (tensor<2x2x8xf32>, tensor<4x8xf32>) -> tensor<2x2x4xf32>
    %40 = mt.add %33, %39 {mt.layer = 1 : i64} : tensor<2x2x4xf32>
    %41 = mt.rms_norm %40, %arg21 : tensor<2x2x4xf32>, tensor<4xf32>
    %42 = mt.matmul %41, %arg2 transpose_b : (tensor<2x2x4xf32>, tensor<8x4xf32>) -> tensor<2x2x8xf32>
    %43 = mt.cross_entropy %42, %arg1 : (tensor<2x2x8xf32>, tensor<2x2xi32>) -> tensor<f32>
    return %43 : tensor<f32>
  }
}

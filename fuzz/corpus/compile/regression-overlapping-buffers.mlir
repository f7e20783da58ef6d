module {
  shard.grid @grid(shape = 2x1x1)
  mtrt.program @stage0 attributes {arena_bytes = 94528 : i64, flops_per_token = 51840 : i64, persistent_bytes = 58368 : i64, stage = 0 : i64} {
    %0 = mtrt.buffer {init = {kind = "normal", std = 2.000000e-02 : f64}, kind = "param", name = "wte.weight", offset = 0 : i64} : memref<64x16xf32>
    %1 = mtrt.buffer {kind = "input", microbatch = 0 : i64, name = "tokens", offset = 4096 : i64} : memref<1x8xi32>
    %2 = mtrt.buffer {init = {kind = "normal", std = 2.000000e-02 : f64}, kind = "param", name = "wpe.weight", offset = 4160 : i64} : memref<32x16xf32>
    %3 = mtrt.buffer {init = {kind = "ones"}, kind = "param", name = "h.0.ln_1.weight", offset = 6208 : i64} : memref<16xf32>
    %4 = mtrt.buffer {init = {kind = "zeros"}, kind = "param", name = "h.0.ln_1.bias", offset = 6272 : i64} : memref<16xf32>
    %5 = mtrt.buffer {init = {kind = "normal", std = 2.000000e-02 : f64}, kind = "param", name = "h.0.attn.c_attn.weight", offset = 6336 : i64} : memref<16x48xf32>
    %6 = mtrt.buffer {init = {kind = "zeros"}, kind = "param", name = "h.0.attn.c_attn.bias", offset = 9408 : i64} : memref<48xf32>
    %7 = mtrt.buffer {init = {kind = "normal", std = 1.000000e-02 : f64}, kind = "param", name = "h.0.attn.c_proj.weight", offset = 9600 : i64} : memref<16x16xf32>
    %8 = mtrt.buffer {init = {kind = "zeros"}, kind = "param", name = "h.0.attn.c_proj.bias", offset = 10624 : i64} : memref<16xf32>
    %9 = mtrt.buffer {init = {kind = "ones"}, kind = "param", name = "h.0.ln_2.weight", offset = 10688 : i64} : memref<16xf32>
    %10 = mtrt.buffer {init = {kind = "zeros"}, kind = "param", name = "h.0.ln_2.bias", offset = 10752 : i64} : memref<16xf32>
    %11 = mtrt.buffer {init = {kind = "normal", std = 2.000000e-02 : f64}, kind = "param", name = "h.0.mlp.c_fc.weight", offset = 10816 : i64} : memref<16x64xf32>
    %12 = mtrt.buffer {init = {kind = "zeros"}, kind = "param", name = "h.0.mlp.c_fc.bias", offset = 14912 : i64} : memref<64xf32>
    %13 = mtrt.buffer {init = {kind = "normal", std = 1.000000e-02 : f64}, kind = "param", name = "h.0.mlp.c_proj.weight", offset = 15168 : i64} : memref<64x16xf32>
    %14 = mtrt.buffer {init = {kind = "zeros"}, kind = "param", name = "h.0.mlp.c_proj.bias", offset = 19264 : i64} : memref<16xf32>
    %15 = mtrt.buffer {kind = "input", microbatch = 1 : i64, name = "tokens", offset = 19328 : i64} : memref<1x8xi32>
    %16 = mtrt.buffer {kind = "input", name = "clip_grad", offset = 19392 : i64} : memref<f32>
    %17 = mtrt.buffer {kind = "exp_avg", name = "wte.weight", offset = 19456 : i64} : memref<64x16xf32>
    %18 = mtrt.buffer {kind = "exp_avg_sq", name = "wte.weight", offset = 23552 : i64} : memref<64x16xf32>
    %19 = mtrt.buffer {kind = "input", name = "step", offset = 27648 : i64} : memref<f32>
    %20 = mtrt.buffer {kind = "input", name = "lr", offset = 27712 : i64} : memref<f32>
    %21 = mtrt.buffer {kind = "input", name = "adam_beta1", offset = 27776 : i64} : memref<f32>
    %22 = mtrt.buffer {kind = "input", name = "adam_beta2", offset = 27840 : i64} : memref<f32>
    %23 = mtrt.buffer {kind = "input", name = "adam_eps", offset = 27904 : i64} : memref<f32>
    %24 = mtrt.buffer {kind = "input", name = "weight_decay", offset = 27968 : i64} : memref<f32>
    %25 = mtrt.buffer {kind = "exp_avg", name = "wpe.weight", offset = 28032 : i64} : memref<32x16xf32>
    %26 = mtrt.buffer {kind = "exp_avg_sq", name = "wpe.weight", offset = 30080 : i64} : memref<32x16xf32>
    %27 = mtrt.buffer {kind = "exp_avg", name = "h.0.ln_1.weight", offset = 32128 : i64} : memref<16xf32>
    %28 = mtrt.buffer {kind = "exp_avg_sq", name = "h.0.ln_1.weight", offset = 32192 : i64} : memref<16xf32>
    %29 = mtrt.buffer {kind = "exp_avg", name = "h.0.ln_1.bias", offset = 32256 : i64} : memref<16xf32>
    %30 = mtrt.buffer {kind = "exp_avg_sq", name = "h.0.ln_1.bias", offset = 32320 : i64} : memref<16xf32>
    %31 = mtrt.buffer {kind = "exp_avg", name = "h.0.attn.c_attn.weight", offset = 32384 : i64} : memref<16x48xf32>
    %32 = mtrt.buffer {kind = "exp_avg_sq", name = "h.0.attn.c_attn.weight", offset = 35456 : i64} : memref<16x48xf32>
    %33 = mtrt.buffer {kind = "exp_avg", name = "h.0.attn.c_attn.bias", offset = 38528 : i64} : memref<48xf32>
    %34 = mtrt.buffer {kind = "exp_avg_sq", name = "h.0.attn.c_attn.bias", offset = 38720 : i64} : memref<48xf32>
    %35 = mtrt.buffer {kind = "exp_avg", name = "h.0.attn.c_proj.weight", offset = 38912 : i64} : memref<16x16xf32>
    %36 = mtrt.buffer {kind = "exp_avg_sq", name = "h.0.attn.c_proj.weight", offset = 39936 : i64} : memref<16x16xf32>
    %37 = mtrt.buffer {kind = "exp_avg", name = "h.0.attn.c_proj.bias", offset = 40960 : i64} : memref<16xf32>
    %38 = mtrt.buffer {kind = "exp_avg_sq", name = "h.0.attn.c_proj.bias", offset = 41024 : i64} : memref<16xf32>
    %39 = mtrt.buffer {kind = "exp_avg", name = "h.0.ln_2.weight", offset = 41088 : i64} : memref<16xf32>
    %40 = mtrt.buffer {kind = "exp_avg_sq", name = "h.0.ln_2.weight", offset = 41152 : i64} : memref<16xf32>
    %41 = mtrt.buffer {kind = "exp_avg", name = "h.0.ln_2.bias", offset = 41216 : i64} : memref<16xf32>
    %42 = mtrt.buffer {kind = "exp_avg_sq", name = "h.0.ln_2.bias", offset = 41280 : i64} : memref<16xf32>
    %43 = mtrt.buffer {kind = "exp_avg", name = "h.0.mlp.c_fc.weight", offset = 41344 : i64} : memref<16x64xf32>
    %44 = mtrt.buffer {kind = "exp_avg_sq", name = "h.0.mlp.c_fc.weight", offset = 45440 : i64} : memref<16x64xf32>
    %45 = mtrt.buffer {kind = "exp_avg", name = "h.0.mlp.c_fc.bias", offset = 49536 : i64} : memref<64xf32>
    %46 = mtrt.buffer {kind = "exp_avg_sq", name = "h.0.mlp.c_fc.bias", offset = 49792 : i64} : memref<64xf32>
    %47 = mtrt.buffer {kind = "exp_avg", name = "h.0.mlp.c_proj.weight", offset = 50048 : i64} : memref<64x16xf32>
    %48 = mtrt.buffer {kind = "exp_avg_sq", name = "h.0.mlp.c_proj.weight", offset = 54144 : i64} : memref<64x16xf32>
    %49 = mtrt.buffer {kind = "exp_avg", name = "h.0.mlp.c_proj.bias", offset = 58240 : i64} : memref<16xf32>
    %50 = mtrt.buffer {kind = "exp_avg_sq", name = "h.0.mlp.c_proj.bias", offset = 58304 : i64} : memref<16xf32>
    %51 = mtrt.buffer {kind = "activation", offset = 58368 : i64} : memref<1x8x16xf32>
    mtrt.kernel "embedding" ins(%0, %1 : memref<64x16xf32>, memref<1x8xi32>) outs(%51 : memref<1x8x16xf32>) {} {microbatch = 0 : i64, phase = "forward"}
    %52 = mtrt.buffer {kind = "activation", offset = 58880 : i64} : memref<8x16xf32>
    mtrt.kernel "position_embedding" ins(%2 : memref<32x16xf32>) outs(%52 : memref<8x16xf32>) {} {microbatch = 0 : i64, phase = "forward"}
    %53 = mtrt.buffer {kind = "activation", offset = 59392 : i64} : memref<1x8x16xf32>
    mtrt.kernel "bias_add" ins(%51, %52 : memref<1x8x16xf32>, memref<8x16xf32>) outs(%53 : memref<1x8x16xf32>) {} {microbatch = 0 : i64, phase = "forward"}
    %54 = mtrt.buffer {kind = "activation", offset = 70656 : i64} : memref<1x8x16xf32>
    mtrt.kernel "dropout" ins(%53 : memref<1x8x16xf32>) outs(%54 : memref<1x8x16xf32>) {probability = 1.000000e-01 : f64, rng_stream = 0 : i64} {microbatch = 0 : i64, phase = "forward"}
    %55 = mtrt.buffer {kind = "activation", offset = 71168 : i64} : memref<1x8x16xf32>
    mtrt.kernel "layer_norm" ins(%54, %3, %4 : memref<1x8x16xf32>, memref<16xf32>, memref<16xf32>) outs(%55 : memref<1x8x16xf32>) {epsilon = 1.000000e-05 : f64} {layer = 0 : i64, microbatch = 0 : i64, phase = "forward"}
    %56 = mtrt.buffer {kind = "activation", offset = 58368 : i64} : memref<1x8x48xf32>
    mtrt.kernel "matmul" ins(%55, %5 : memref<1x8x16xf32>, memref<16x48xf32>) outs(%56 : memref<1x8x48xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "forward"}
    %57 = mtrt.buffer {kind = "activation", offset = 59904 : i64} : memref<1x8x48xf32>
    mtrt.kernel "bias_add" ins(%56, %6 : memref<1x8x48xf32>, memref<48xf32>) outs(%57 : memref<1x8x48xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "forward"}
    %58 = mtrt.buffer {kind = "activation", offset = 71680 : i64} : memref<1x2x8x8xf32>
    %59 = mtrt.buffer {kind = "activation", offset = 72192 : i64} : memref<1x2x8x8xf32>
    %60 = mtrt.buffer {kind = "activation", offset = 72704 : i64} : memref<1x2x8x8xf32>
    mtrt.kernel "split_heads" ins(%57 : memref<1x8x48xf32>) outs(%58, %59, %60 : memref<1x2x8x8xf32>, memref<1x2x8x8xf32>, memref<1x2x8x8xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "forward"}
    %61 = mtrt.buffer {kind = "activation", offset = 58368 : i64} : memref<1x2x8x8xf32>
    mtrt.kernel "attention" ins(%58, %59, %60 : memref<1x2x8x8xf32>, memref<1x2x8x8xf32>, memref<1x2x8x8xf32>) outs(%61 : memref<1x2x8x8xf32>) {dropout = 1.000000e-01 : f64, rng_stream = 1 : i64} {layer = 0 : i64, microbatch = 0 : i64, phase = "forward"}
    %62 = mtrt.buffer {kind = "activation", offset = 73216 : i64} : memref<1x8x16xf32>
    mtrt.kernel "merge_heads" ins(%61 : memref<1x2x8x8xf32>) outs(%62 : memref<1x8x16xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "forward"}
    %63 = mtrt.buffer {kind = "activation", offset = 58368 : i64} : memref<1x8x16xf32>
    mtrt.kernel "matmul" ins(%62, %7 : memref<1x8x16xf32>, memref<16x16xf32>) outs(%63 : memref<1x8x16xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "forward"}
    %64 = mtrt.buffer {kind = "activation", offset = 58880 : i64} : memref<1x8x16xf32>
    mtrt.kernel "bias_add" ins(%63, %8 : memref<1x8x16xf32>, memref<16xf32>) outs(%64 : memref<1x8x16xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "forward"}
    %65 = mtrt.buffer {kind = "activation", offset = 58368 : i64} : memref<1x8x16xf32>
    mtrt.kernel "dropout" ins(%64 : memref<1x8x16xf32>) outs(%65 : memref<1x8x16xf32>) {probability = 1.000000e-01 : f64, rng_stream = 2 : i64} {layer = 0 : i64, microbatch = 0 : i64, phase = "forward"}
    %66 = mtrt.buffer {kind = "activation", offset = 73727 : i64} : memref<1x8x16xf32>
    mtrt.kernel "add" ins(%54, %65 : memref<1x8x16xf32>, memref<1x8x16xf32>) outs(%66 : memref<1x8x16xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "forward"}
    %67 = mtrt.buffer {kind = "activation", offset = 74240 : i64} : memref<1x8x16xf32>
    mtrt.kernel "layer_norm" ins(%66, %9, %10 : memref<1x8x16xf32>, memref<16xf32>, memref<16xf32>) outs(%67 : memref<1x8x16xf32>) {epsilon = 1.000000e-05 : f64} {layer = 0 : i64, microbatch = 0 : i64, phase = "forward"}
    %68 = mtrt.buffer {kind = "activation", offset = 58368 : i64} : memref<1x8x64xf32>
    mtrt.kernel "matmul" ins(%67, %11 : memref<1x8x16xf32>, memref<16x64xf32>) outs(%68 : memref<1x8x64xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "forward"}
    %69 = mtrt.buffer {kind = "activation", offset = 62464 : i64} : memref<1x8x64xf32>
    mtrt.kernel "bias_add" ins(%68, %12 : memref<1x8x64xf32>, memref<64xf32>) outs(%69 : memref<1x8x64xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "forward"}
    %70 = mtrt.buffer {kind = "activation", offset = 64512 : i64} : memref<1x8x64xf32>
    mtrt.kernel "gelu" ins(%69 : memref<1x8x64xf32>) outs(%70 : memref<1x8x64xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "forward"}
    %71 = mtrt.buffer {kind = "activation", offset = 58368 : i64} : memref<1x8x16xf32>
    mtrt.kernel "matmul" ins(%70, %13 : memref<1x8x64xf32>, memref<64x16xf32>) outs(%71 : memref<1x8x16xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "forward"}
    %72 = mtrt.buffer {kind = "activation", offset = 58880 : i64} : memref<1x8x16xf32>
    mtrt.kernel "bias_add" ins(%71, %14 : memref<1x8x16xf32>, memref<16xf32>) outs(%72 : memref<1x8x16xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "forward"}
    %73 = mtrt.buffer {kind = "activation", offset = 58368 : i64} : memref<1x8x16xf32>
    mtrt.kernel "dropout" ins(%72 : memref<1x8x16xf32>) outs(%73 : memref<1x8x16xf32>) {probability = 1.000000e-01 : f64, rng_stream = 3 : i64} {layer = 0 : i64, microbatch = 0 : i64, phase = "forward"}
    %74 = mtrt.buffer {kind = "activation", offset = 58880 : i64} : memref<1x8x16xf32>
    mtrt.kernel "add" ins(%66, %73 : memref<1x8x16xf32>, memref<1x8x16xf32>) outs(%74 : memref<1x8x16xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "forward"}
    %75 = mtrt.buffer {alias, kind = "activation", offset = 58880 : i64} : memref<1x8x16xf32>
    mtrt.send %74 to 1 {microbatch = 0 : i64, tag = 0 : i64} : memref<1x8x16xf32>
    %76 = mtrt.buffer {kind = "activation", offset = 58368 : i64} : memref<1x8x16xf32>
    mtrt.kernel "embedding" ins(%0, %15 : memref<64x16xf32>, memref<1x8xi32>) outs(%76 : memref<1x8x16xf32>) {} {microbatch = 1 : i64, phase = "forward"}
    %77 = mtrt.buffer {kind = "activation", offset = 58880 : i64} : memref<8x16xf32>
    mtrt.kernel "position_embedding" ins(%2 : memref<32x16xf32>) outs(%77 : memref<8x16xf32>) {} {microbatch = 1 : i64, phase = "forward"}
    %78 = mtrt.buffer {kind = "activation", offset = 59392 : i64} : memref<1x8x16xf32>
    mtrt.kernel "bias_add" ins(%76, %77 : memref<1x8x16xf32>, memref<8x16xf32>) outs(%78 : memref<1x8x16xf32>) {} {microbatch = 1 : i64, phase = "forward"}
    %79 = mtrt.buffer {kind = "activation", offset = 89088 : i64} : memref<1x8x16xf32>
    mtrt.kernel "dropout" ins(%78 : memref<1x8x16xf32>) outs(%79 : memref<1x8x16xf32>) {probability = 1.000000e-01 : f64, rng_offset = 128 : i64, rng_stream = 0 : i64} {microbatch = 1 : i64, phase = "forward"}
    %80 = mtrt.buffer {kind = "activation", offset = 89600 : i64} : memref<1x8x16xf32>
    mtrt.kernel "layer_norm" ins(%79, %3, %4 : memref<1x8x16xf32>, memref<16xf32>, memref<16xf32>) outs(%80 : memref<1x8x16xf32>) {epsilon = 1.000000e-05 : f64} {layer = 0 : i64, microbatch = 1 : i64, phase = "forward"}
    %81 = mtrt.buffer {kind = "activation", offset = 58368 : i64} : memref<1x8x48xf32>
    mtrt.kernel "matmul" ins(%80, %5 : memref<1x8x16xf32>, memref<16x48xf32>) outs(%81 : memref<1x8x48xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "forward"}
    %82 = mtrt.buffer {kind = "activation", offset = 59904 : i64} : memref<1x8x48xf32>
    mtrt.kernel "bias_add" ins(%81, %6 : memref<1x8x48xf32>, memref<48xf32>) outs(%82 : memref<1x8x48xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "forward"}
    %83 = mtrt.buffer {kind = "activation", offset = 90112 : i64} : memref<1x2x8x8xf32>
    %84 = mtrt.buffer {kind = "activation", offset = 90624 : i64} : memref<1x2x8x8xf32>
    %85 = mtrt.buffer {kind = "activation", offset = 91136 : i64} : memref<1x2x8x8xf32>
    mtrt.kernel "split_heads" ins(%82 : memref<1x8x48xf32>) outs(%83, %84, %85 : memref<1x2x8x8xf32>, memref<1x2x8x8xf32>, memref<1x2x8x8xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "forward"}
    %86 = mtrt.buffer {kind = "activation", offset = 58368 : i64} : memref<1x2x8x8xf32>
    mtrt.kernel "attention" ins(%83, %84, %85 : memref<1x2x8x8xf32>, memref<1x2x8x8xf32>, memref<1x2x8x8xf32>) outs(%86 : memref<1x2x8x8xf32>) {dropout = 1.000000e-01 : f64, rng_offset = 128 : i64, rng_stream = 1 : i64} {layer = 0 : i64, microbatch = 1 : i64, phase = "forward"}
    %87 = mtrt.buffer {kind = "activation", offset = 91648 : i64} : memref<1x8x16xf32>
    mtrt.kernel "merge_heads" ins(%86 : memref<1x2x8x8xf32>) outs(%87 : memref<1x8x16xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "forward"}
    %88 = mtrt.buffer {kind = "activation", offset = 58368 : i64} : memref<1x8x16xf32>
    mtrt.kernel "matmul" ins(%87, %7 : memref<1x8x16xf32>, memref<16x16xf32>) outs(%88 : memref<1x8x16xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "forward"}
    %89 = mtrt.buffer {kind = "activation", offset = 58880 : i64} : memref<1x8x16xf32>
    mtrt.kernel "bias_add" ins(%88, %8 : memref<1x8x16xf32>, memref<16xf32>) outs(%89 : memref<1x8x16xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "forward"}
    %90 = mtrt.buffer {kind = "activation", offset = 58368 : i64} : memref<1x8x16xf32>
    mtrt.kernel "dropout" ins(%89 : memref<1x8x16xf32>) outs(%90 : memref<1x8x16xf32>) {probability = 1.000000e-01 : f64, rng_offset = 128 : i64, rng_stream = 2 : i64} {layer = 0 : i64, microbatch = 1 : i64, phase = "forward"}
    %91 = mtrt.buffer {kind = "activation", offset = 92160 : i64} : memref<1x8x16xf32>
    mtrt.kernel "add" ins(%79, %90 : memref<1x8x16xf32>, memref<1x8x16xf32>) outs(%91 : memref<1x8x16xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "forward"}
    %92 = mtrt.buffer {kind = "activation", offset = 92672 : i64} : memref<1x8x16xf32>
    mtrt.kernel "layer_norm" ins(%91, %9, %10 : memref<1x8x16xf32>, memref<16xf32>, memref<16xf32>) outs(%92 : memref<1x8x16xf32>) {epsilon = 1.000000e-05 : f64} {layer = 0 : i64, microbatch = 1 : i64, phase = "forward"}
    %93 = mtrt.buffer {kind = "activation", offset = 58368 : i64} : memref<1x8x64xf32>
    mtrt.kernel "matmul" ins(%92, %11 : memref<1x8x16xf32>, memref<16x64xf32>) outs(%93 : memref<1x8x64xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "forward"}
    %94 = mtrt.buffer {kind = "activation", offset = 81920 : i64} : memref<1x8x64xf32>
    mtrt.kernel "bias_add" ins(%93, %12 : memref<1x8x64xf32>, memref<64xf32>) outs(%94 : memref<1x8x64xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "forward"}
    %95 = mtrt.buffer {kind = "activation", offset = 74752 : i64} : memref<1x8x64xf32>
    mtrt.kernel "gelu" ins(%94 : memref<1x8x64xf32>) outs(%95 : memref<1x8x64xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "forward"}
    %96 = mtrt.buffer {kind = "activation", offset = 58368 : i64} : memref<1x8x16xf32>
    mtrt.kernel "matmul" ins(%95, %13 : memref<1x8x64xf32>, memref<64x16xf32>) outs(%96 : memref<1x8x16xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "forward"}
    %97 = mtrt.buffer {kind = "activation", offset = 58880 : i64} : memref<1x8x16xf32>
    mtrt.kernel "bias_add" ins(%96, %14 : memref<1x8x16xf32>, memref<16xf32>) outs(%97 : memref<1x8x16xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "forward"}
    %98 = mtrt.buffer {kind = "activation", offset = 58368 : i64} : memref<1x8x16xf32>
    mtrt.kernel "dropout" ins(%97 : memref<1x8x16xf32>) outs(%98 : memref<1x8x16xf32>) {probability = 1.000000e-01 : f64, rng_offset = 128 : i64, rng_stream = 3 : i64} {layer = 0 : i64, microbatch = 1 : i64, phase = "forward"}
    %99 = mtrt.buffer {kind = "activation", offset = 58880 : i64} : memref<1x8x16xf32>
    mtrt.kernel "add" ins(%91, %98 : memref<1x8x16xf32>, memref<1x8x16xf32>) outs(%99 : memref<1x8x16xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "forward"}
    %100 = mtrt.buffer {alias, kind = "activation", offset = 58880 : i64} : memref<1x8x16xf32>
    mtrt.send %99 to 1 {microbatch = 1 : i64, tag = 1 : i64} : memref<1x8x16xf32>
    %101 = mtrt.buffer {kind = "activation", offset = 76800 : i64} : memref<1x8x16xf32>
    %102 = mtrt.buffer {alias, kind = "activation", offset = 76800 : i64} : memref<1x8x16xf32>
    mtrt.recv %102 from 1 {microbatch = 0 : i64, tag = 2 : i64} : memref<1x8x16xf32>
    %103 = mtrt.buffer {kind = "activation", offset = 68608 : i64} : memref<1x8x16xf32>
    mtrt.kernel "dropout" ins(%102 : memref<1x8x16xf32>) outs(%103 : memref<1x8x16xf32>) {probability = 1.000000e-01 : f64, rng_stream = 3 : i64} {layer = 0 : i64, microbatch = 0 : i64, phase = "backward"}
    %104 = mtrt.buffer {kind = "activation", offset = 77312 : i64} : memref<16xf32>
    mtrt.kernel "bias_add_grad" ins(%103 : memref<1x8x16xf32>) outs(%104 : memref<16xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "backward"}
    %105 = mtrt.buffer {kind = "activation", offset = 66560 : i64} : memref<1x8x64xf32>
    mtrt.kernel "matmul" ins(%103, %13 : memref<1x8x16xf32>, memref<64x16xf32>) outs(%105 : memref<1x8x64xf32>) {transpose_b} {layer = 0 : i64, microbatch = 0 : i64, phase = "backward"}
    %106 = mtrt.buffer {alias, kind = "activation", offset = 64512 : i64} : memref<8x64xf32>
    %107 = mtrt.buffer {alias, kind = "activation", offset = 68608 : i64} : memref<8x16xf32>
    %108 = mtrt.buffer {kind = "activation", offset = 58368 : i64} : memref<64x16xf32>
    mtrt.kernel "matmul" ins(%106, %107 : memref<8x64xf32>, memref<8x16xf32>) outs(%108 : memref<64x16xf32>) {transpose_a} {layer = 0 : i64, microbatch = 0 : i64, phase = "backward"}
    %109 = mtrt.buffer {kind = "activation", offset = 68608 : i64} : memref<1x8x64xf32>
    mtrt.kernel "gelu_grad" ins(%105, %69 : memref<1x8x64xf32>, memref<1x8x64xf32>) outs(%109 : memref<1x8x64xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "backward"}
    %110 = mtrt.buffer {kind = "activation", offset = 93696 : i64} : memref<64xf32>
    mtrt.kernel "bias_add_grad" ins(%109 : memref<1x8x64xf32>) outs(%110 : memref<64xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "backward"}
    %111 = mtrt.buffer {kind = "activation", offset = 66560 : i64} : memref<1x8x16xf32>
    mtrt.kernel "matmul" ins(%109, %11 : memref<1x8x64xf32>, memref<16x64xf32>) outs(%111 : memref<1x8x16xf32>) {transpose_b} {layer = 0 : i64, microbatch = 0 : i64, phase = "backward"}
    %112 = mtrt.buffer {alias, kind = "activation", offset = 74240 : i64} : memref<8x16xf32>
    %113 = mtrt.buffer {alias, kind = "activation", offset = 68608 : i64} : memref<8x64xf32>
    %114 = mtrt.buffer {kind = "activation", offset = 62464 : i64} : memref<16x64xf32>
    mtrt.kernel "matmul" ins(%112, %113 : memref<8x16xf32>, memref<8x64xf32>) outs(%114 : memref<16x64xf32>) {transpose_a} {layer = 0 : i64, microbatch = 0 : i64, phase = "backward"}
    %115 = mtrt.buffer {kind = "activation", offset = 67072 : i64} : memref<1x8x16xf32>
    %116 = mtrt.buffer {kind = "activation", offset = 94144 : i64} : memref<16xf32>
    %117 = mtrt.buffer {kind = "activation", offset = 94208 : i64} : memref<16xf32>
    mtrt.kernel "layer_norm_grad" ins(%111, %66, %9 : memref<1x8x16xf32>, memref<1x8x16xf32>, memref<16xf32>) outs(%115, %116, %117 : memref<1x8x16xf32>, memref<16xf32>, memref<16xf32>) {epsilon = 1.000000e-05 : f64} {layer = 0 : i64, microbatch = 0 : i64, phase = "backward"}
    %118 = mtrt.buffer {kind = "activation", offset = 68096 : i64} : memref<1x8x16xf32>
    mtrt.kernel "add" ins(%102, %115 : memref<1x8x16xf32>, memref<1x8x16xf32>) outs(%118 : memref<1x8x16xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "backward"}
    %119 = mtrt.buffer {kind = "activation", offset = 66560 : i64} : memref<1x8x16xf32>
    mtrt.kernel "dropout" ins(%118 : memref<1x8x16xf32>) outs(%119 : memref<1x8x16xf32>) {probability = 1.000000e-01 : f64, rng_stream = 2 : i64} {layer = 0 : i64, microbatch = 0 : i64, phase = "backward"}
    %120 = mtrt.buffer {kind = "activation", offset = 94272 : i64} : memref<16xf32>
    mtrt.kernel "bias_add_grad" ins(%119 : memref<1x8x16xf32>) outs(%120 : memref<16xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "backward"}
    %121 = mtrt.buffer {kind = "activation", offset = 67072 : i64} : memref<1x8x16xf32>
    mtrt.kernel "matmul" ins(%119, %7 : memref<1x8x16xf32>, memref<16x16xf32>) outs(%121 : memref<1x8x16xf32>) {transpose_b} {layer = 0 : i64, microbatch = 0 : i64, phase = "backward"}
    %122 = mtrt.buffer {alias, kind = "activation", offset = 73216 : i64} : memref<8x16xf32>
    %123 = mtrt.buffer {alias, kind = "activation", offset = 66560 : i64} : memref<8x16xf32>
    %124 = mtrt.buffer {kind = "activation", offset = 83968 : i64} : memref<16x16xf32>
    mtrt.kernel "matmul" ins(%122, %123 : memref<8x16xf32>, memref<8x16xf32>) outs(%124 : memref<16x16xf32>) {transpose_a} {layer = 0 : i64, microbatch = 0 : i64, phase = "backward"}
    %125 = mtrt.buffer {kind = "activation", offset = 66560 : i64} : memref<1x2x8x8xf32>
    mtrt.kernel "split_heads" ins(%121 : memref<1x8x16xf32>) outs(%125 : memref<1x2x8x8xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "backward"}
    %126 = mtrt.buffer {kind = "activation", offset = 68608 : i64} : memref<1x2x8x8xf32>
    %127 = mtrt.buffer {kind = "activation", offset = 69120 : i64} : memref<1x2x8x8xf32>
    %128 = mtrt.buffer {kind = "activation", offset = 69632 : i64} : memref<1x2x8x8xf32>
    mtrt.kernel "attention_grad" ins(%125, %58, %59, %60 : memref<1x2x8x8xf32>, memref<1x2x8x8xf32>, memref<1x2x8x8xf32>, memref<1x2x8x8xf32>) outs(%126, %127, %128 : memref<1x2x8x8xf32>, memref<1x2x8x8xf32>, memref<1x2x8x8xf32>) {dropout = 1.000000e-01 : f64, rng_stream = 1 : i64} {layer = 0 : i64, microbatch = 0 : i64, phase = "backward"}
    %129 = mtrt.buffer {kind = "activation", offset = 66560 : i64} : memref<1x8x48xf32>
    mtrt.kernel "merge_heads" ins(%126, %127, %128 : memref<1x2x8x8xf32>, memref<1x2x8x8xf32>, memref<1x2x8x8xf32>) outs(%129 : memref<1x8x48xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "backward"}
    %130 = mtrt.buffer {kind = "activation", offset = 93952 : i64} : memref<48xf32>
    mtrt.kernel "bias_add_grad" ins(%129 : memref<1x8x48xf32>) outs(%130 : memref<48xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "backward"}
    %131 = mtrt.buffer {kind = "activation", offset = 68608 : i64} : memref<1x8x16xf32>
    mtrt.kernel "matmul" ins(%129, %5 : memref<1x8x48xf32>, memref<16x48xf32>) outs(%131 : memref<1x8x16xf32>) {transpose_b} {layer = 0 : i64, microbatch = 0 : i64, phase = "backward"}
    %132 = mtrt.buffer {alias, kind = "activation", offset = 71168 : i64} : memref<8x16xf32>
    %133 = mtrt.buffer {alias, kind = "activation", offset = 66560 : i64} : memref<8x48xf32>
    %134 = mtrt.buffer {kind = "activation", offset = 78848 : i64} : memref<16x48xf32>
    mtrt.kernel "matmul" ins(%132, %133 : memref<8x16xf32>, memref<8x48xf32>) outs(%134 : memref<16x48xf32>) {transpose_a} {layer = 0 : i64, microbatch = 0 : i64, phase = "backward"}
    %135 = mtrt.buffer {kind = "activation", offset = 66560 : i64} : memref<1x8x16xf32>
    %136 = mtrt.buffer {kind = "activation", offset = 94336 : i64} : memref<16xf32>
    %137 = mtrt.buffer {kind = "activation", offset = 94400 : i64} : memref<16xf32>
    mtrt.kernel "layer_norm_grad" ins(%131, %54, %3 : memref<1x8x16xf32>, memref<1x8x16xf32>, memref<16xf32>) outs(%135, %136, %137 : memref<1x8x16xf32>, memref<16xf32>, memref<16xf32>) {epsilon = 1.000000e-05 : f64} {layer = 0 : i64, microbatch = 0 : i64, phase = "backward"}
    %138 = mtrt.buffer {kind = "activation", offset = 67072 : i64} : memref<1x8x16xf32>
    mtrt.kernel "add" ins(%118, %135 : memref<1x8x16xf32>, memref<1x8x16xf32>) outs(%138 : memref<1x8x16xf32>) {} {layer = 0 : i64, microbatch = 0 : i64, phase = "backward"}
    %139 = mtrt.buffer {kind = "activation", offset = 70656 : i64} : memref<1x8x16xf32>
    mtrt.kernel "dropout" ins(%138 : memref<1x8x16xf32>) outs(%139 : memref<1x8x16xf32>) {probability = 1.000000e-01 : f64, rng_stream = 0 : i64} {microbatch = 0 : i64, phase = "backward"}
    %140 = mtrt.buffer {kind = "activation", offset = 66560 : i64} : memref<8x16xf32>
    mtrt.kernel "bias_add_grad" ins(%139 : memref<1x8x16xf32>) outs(%140 : memref<8x16xf32>) {} {microbatch = 0 : i64, phase = "backward"}
    %141 = mtrt.buffer {kind = "activation", offset = 84992 : i64} : memref<32x16xf32>
    mtrt.kernel "position_embedding_grad" ins(%140 : memref<8x16xf32>) outs(%141 : memref<32x16xf32>) {} {microbatch = 0 : i64, phase = "backward"}
    %142 = mtrt.buffer {kind = "activation", offset = 66560 : i64} : memref<64x16xf32>
    mtrt.kernel "embedding_grad" ins(%139, %1 : memref<1x8x16xf32>, memref<1x8xi32>) outs(%142 : memref<64x16xf32>) {} {microbatch = 0 : i64, phase = "backward"}
    %143 = mtrt.buffer {kind = "activation", offset = 93184 : i64} : memref<1x8x16xf32>
    %144 = mtrt.buffer {alias, kind = "activation", offset = 93184 : i64} : memref<1x8x16xf32>
    mtrt.recv %144 from 1 {microbatch = 1 : i64, tag = 3 : i64} : memref<1x8x16xf32>
    %145 = mtrt.buffer {kind = "activation", offset = 76800 : i64} : memref<1x8x16xf32>
    mtrt.kernel "dropout" ins(%144 : memref<1x8x16xf32>) outs(%145 : memref<1x8x16xf32>) {probability = 1.000000e-01 : f64, rng_offset = 128 : i64, rng_stream = 3 : i64} {layer = 0 : i64, microbatch = 1 : i64, phase = "backward"}
    %146 = mtrt.buffer {kind = "activation", offset = 70656 : i64} : memref<16xf32>
    mtrt.kernel "bias_add_grad" ins(%145 : memref<1x8x16xf32>) outs(%146 : memref<16xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "backward"}
    %147 = mtrt.buffer {kind = "gradient", offset = 94464 : i64} : memref<16xf32>
    mtrt.kernel "add" ins(%104, %146 : memref<16xf32>, memref<16xf32>) outs(%147 : memref<16xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %148 = mtrt.buffer {kind = "activation", offset = 87040 : i64} : memref<1x8x64xf32>
    mtrt.kernel "matmul" ins(%145, %13 : memref<1x8x16xf32>, memref<64x16xf32>) outs(%148 : memref<1x8x64xf32>) {transpose_b} {layer = 0 : i64, microbatch = 1 : i64, phase = "backward"}
    %149 = mtrt.buffer {alias, kind = "activation", offset = 74752 : i64} : memref<8x64xf32>
    %150 = mtrt.buffer {alias, kind = "activation", offset = 76800 : i64} : memref<8x16xf32>
    %151 = mtrt.buffer {kind = "activation", offset = 70656 : i64} : memref<64x16xf32>
    mtrt.kernel "matmul" ins(%149, %150 : memref<8x64xf32>, memref<8x16xf32>) outs(%151 : memref<64x16xf32>) {transpose_a} {layer = 0 : i64, microbatch = 1 : i64, phase = "backward"}
    %152 = mtrt.buffer {kind = "gradient", offset = 74752 : i64} : memref<64x16xf32>
    mtrt.kernel "add" ins(%108, %151 : memref<64x16xf32>, memref<64x16xf32>) outs(%152 : memref<64x16xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %153 = mtrt.buffer {kind = "activation", offset = 70656 : i64} : memref<1x8x64xf32>
    mtrt.kernel "gelu_grad" ins(%148, %94 : memref<1x8x64xf32>, memref<1x8x64xf32>) outs(%153 : memref<1x8x64xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "backward"}
    %154 = mtrt.buffer {kind = "activation", offset = 58368 : i64} : memref<64xf32>
    mtrt.kernel "bias_add_grad" ins(%153 : memref<1x8x64xf32>) outs(%154 : memref<64xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "backward"}
    %155 = mtrt.buffer {kind = "gradient", offset = 88064 : i64} : memref<64xf32>
    mtrt.kernel "add" ins(%110, %154 : memref<64xf32>, memref<64xf32>) outs(%155 : memref<64xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %156 = mtrt.buffer {kind = "activation", offset = 81920 : i64} : memref<1x8x16xf32>
    mtrt.kernel "matmul" ins(%153, %11 : memref<1x8x64xf32>, memref<16x64xf32>) outs(%156 : memref<1x8x16xf32>) {transpose_b} {layer = 0 : i64, microbatch = 1 : i64, phase = "backward"}
    %157 = mtrt.buffer {alias, kind = "activation", offset = 92672 : i64} : memref<8x16xf32>
    %158 = mtrt.buffer {alias, kind = "activation", offset = 70656 : i64} : memref<8x64xf32>
    %159 = mtrt.buffer {kind = "activation", offset = 58368 : i64} : memref<16x64xf32>
    mtrt.kernel "matmul" ins(%157, %158 : memref<8x16xf32>, memref<8x64xf32>) outs(%159 : memref<16x64xf32>) {transpose_a} {layer = 0 : i64, microbatch = 1 : i64, phase = "backward"}
    %160 = mtrt.buffer {kind = "gradient", offset = 70656 : i64} : memref<16x64xf32>
    mtrt.kernel "add" ins(%114, %159 : memref<16x64xf32>, memref<16x64xf32>) outs(%160 : memref<16x64xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %161 = mtrt.buffer {kind = "activation", offset = 58368 : i64} : memref<1x8x16xf32>
    %162 = mtrt.buffer {kind = "activation", offset = 58880 : i64} : memref<16xf32>
    %163 = mtrt.buffer {kind = "activation", offset = 58944 : i64} : memref<16xf32>
    mtrt.kernel "layer_norm_grad" ins(%156, %91, %9 : memref<1x8x16xf32>, memref<1x8x16xf32>, memref<16xf32>) outs(%161, %162, %163 : memref<1x8x16xf32>, memref<16xf32>, memref<16xf32>) {epsilon = 1.000000e-05 : f64} {layer = 0 : i64, microbatch = 1 : i64, phase = "backward"}
    %164 = mtrt.buffer {kind = "gradient", offset = 88512 : i64} : memref<16xf32>
    mtrt.kernel "add" ins(%116, %162 : memref<16xf32>, memref<16xf32>) outs(%164 : memref<16xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %165 = mtrt.buffer {kind = "gradient", offset = 88576 : i64} : memref<16xf32>
    mtrt.kernel "add" ins(%117, %163 : memref<16xf32>, memref<16xf32>) outs(%165 : memref<16xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %166 = mtrt.buffer {kind = "activation", offset = 62976 : i64} : memref<1x8x16xf32>
    mtrt.kernel "add" ins(%144, %161 : memref<1x8x16xf32>, memref<1x8x16xf32>) outs(%166 : memref<1x8x16xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "backward"}
    %167 = mtrt.buffer {kind = "activation", offset = 59392 : i64} : memref<1x8x16xf32>
    mtrt.kernel "dropout" ins(%166 : memref<1x8x16xf32>) outs(%167 : memref<1x8x16xf32>) {probability = 1.000000e-01 : f64, rng_offset = 128 : i64, rng_stream = 2 : i64} {layer = 0 : i64, microbatch = 1 : i64, phase = "backward"}
    %168 = mtrt.buffer {kind = "activation", offset = 58368 : i64} : memref<16xf32>
    mtrt.kernel "bias_add_grad" ins(%167 : memref<1x8x16xf32>) outs(%168 : memref<16xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "backward"}
    %169 = mtrt.buffer {kind = "gradient", offset = 88640 : i64} : memref<16xf32>
    mtrt.kernel "add" ins(%120, %168 : memref<16xf32>, memref<16xf32>) outs(%169 : memref<16xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %170 = mtrt.buffer {kind = "activation", offset = 59904 : i64} : memref<1x8x16xf32>
    mtrt.kernel "matmul" ins(%167, %7 : memref<1x8x16xf32>, memref<16x16xf32>) outs(%170 : memref<1x8x16xf32>) {transpose_b} {layer = 0 : i64, microbatch = 1 : i64, phase = "backward"}
    %171 = mtrt.buffer {alias, kind = "activation", offset = 91648 : i64} : memref<8x16xf32>
    %172 = mtrt.buffer {alias, kind = "activation", offset = 59392 : i64} : memref<8x16xf32>
    %173 = mtrt.buffer {kind = "activation", offset = 58368 : i64} : memref<16x16xf32>
    mtrt.kernel "matmul" ins(%171, %172 : memref<8x16xf32>, memref<8x16xf32>) outs(%173 : memref<16x16xf32>) {transpose_a} {layer = 0 : i64, microbatch = 1 : i64, phase = "backward"}
    %174 = mtrt.buffer {kind = "gradient", offset = 87040 : i64} : memref<16x16xf32>
    mtrt.kernel "add" ins(%124, %173 : memref<16x16xf32>, memref<16x16xf32>) outs(%174 : memref<16x16xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %175 = mtrt.buffer {kind = "activation", offset = 58368 : i64} : memref<1x2x8x8xf32>
    mtrt.kernel "split_heads" ins(%170 : memref<1x8x16xf32>) outs(%175 : memref<1x2x8x8xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "backward"}
    %176 = mtrt.buffer {kind = "activation", offset = 58880 : i64} : memref<1x2x8x8xf32>
    %177 = mtrt.buffer {kind = "activation", offset = 59392 : i64} : memref<1x2x8x8xf32>
    %178 = mtrt.buffer {kind = "activation", offset = 59904 : i64} : memref<1x2x8x8xf32>
    mtrt.kernel "attention_grad" ins(%175, %83, %84, %85 : memref<1x2x8x8xf32>, memref<1x2x8x8xf32>, memref<1x2x8x8xf32>, memref<1x2x8x8xf32>) outs(%176, %177, %178 : memref<1x2x8x8xf32>, memref<1x2x8x8xf32>, memref<1x2x8x8xf32>) {dropout = 1.000000e-01 : f64, rng_offset = 128 : i64, rng_stream = 1 : i64} {layer = 0 : i64, microbatch = 1 : i64, phase = "backward"}
    %179 = mtrt.buffer {kind = "activation", offset = 61440 : i64} : memref<1x8x48xf32>
    mtrt.kernel "merge_heads" ins(%176, %177, %178 : memref<1x2x8x8xf32>, memref<1x2x8x8xf32>, memref<1x2x8x8xf32>) outs(%179 : memref<1x8x48xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "backward"}
    %180 = mtrt.buffer {kind = "activation", offset = 58368 : i64} : memref<48xf32>
    mtrt.kernel "bias_add_grad" ins(%179 : memref<1x8x48xf32>) outs(%180 : memref<48xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "backward"}
    %181 = mtrt.buffer {kind = "gradient", offset = 88320 : i64} : memref<48xf32>
    mtrt.kernel "add" ins(%130, %180 : memref<48xf32>, memref<48xf32>) outs(%181 : memref<48xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %182 = mtrt.buffer {kind = "activation", offset = 63488 : i64} : memref<1x8x16xf32>
    mtrt.kernel "matmul" ins(%179, %5 : memref<1x8x48xf32>, memref<16x48xf32>) outs(%182 : memref<1x8x16xf32>) {transpose_b} {layer = 0 : i64, microbatch = 1 : i64, phase = "backward"}
    %183 = mtrt.buffer {alias, kind = "activation", offset = 89600 : i64} : memref<8x16xf32>
    %184 = mtrt.buffer {alias, kind = "activation", offset = 61440 : i64} : memref<8x48xf32>
    %185 = mtrt.buffer {kind = "activation", offset = 58368 : i64} : memref<16x48xf32>
    mtrt.kernel "matmul" ins(%183, %184 : memref<8x16xf32>, memref<8x48xf32>) outs(%185 : memref<16x48xf32>) {transpose_a} {layer = 0 : i64, microbatch = 1 : i64, phase = "backward"}
    %186 = mtrt.buffer {kind = "gradient", offset = 81920 : i64} : memref<16x48xf32>
    mtrt.kernel "add" ins(%134, %185 : memref<16x48xf32>, memref<16x48xf32>) outs(%186 : memref<16x48xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %187 = mtrt.buffer {kind = "activation", offset = 58368 : i64} : memref<1x8x16xf32>
    %188 = mtrt.buffer {kind = "activation", offset = 58880 : i64} : memref<16xf32>
    %189 = mtrt.buffer {kind = "activation", offset = 58944 : i64} : memref<16xf32>
    mtrt.kernel "layer_norm_grad" ins(%182, %79, %3 : memref<1x8x16xf32>, memref<1x8x16xf32>, memref<16xf32>) outs(%187, %188, %189 : memref<1x8x16xf32>, memref<16xf32>, memref<16xf32>) {epsilon = 1.000000e-05 : f64} {layer = 0 : i64, microbatch = 1 : i64, phase = "backward"}
    %190 = mtrt.buffer {kind = "gradient", offset = 80896 : i64} : memref<16xf32>
    mtrt.kernel "add" ins(%136, %188 : memref<16xf32>, memref<16xf32>) outs(%190 : memref<16xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %191 = mtrt.buffer {kind = "gradient", offset = 80960 : i64} : memref<16xf32>
    mtrt.kernel "add" ins(%137, %189 : memref<16xf32>, memref<16xf32>) outs(%191 : memref<16xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %192 = mtrt.buffer {kind = "activation", offset = 58880 : i64} : memref<1x8x16xf32>
    mtrt.kernel "add" ins(%166, %187 : memref<1x8x16xf32>, memref<1x8x16xf32>) outs(%192 : memref<1x8x16xf32>) {} {layer = 0 : i64, microbatch = 1 : i64, phase = "backward"}
    %193 = mtrt.buffer {kind = "activation", offset = 62464 : i64} : memref<1x8x16xf32>
    mtrt.kernel "dropout" ins(%192 : memref<1x8x16xf32>) outs(%193 : memref<1x8x16xf32>) {probability = 1.000000e-01 : f64, rng_offset = 128 : i64, rng_stream = 0 : i64} {microbatch = 1 : i64, phase = "backward"}
    %194 = mtrt.buffer {kind = "activation", offset = 60416 : i64} : memref<8x16xf32>
    mtrt.kernel "bias_add_grad" ins(%193 : memref<1x8x16xf32>) outs(%194 : memref<8x16xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %195 = mtrt.buffer {kind = "activation", offset = 58368 : i64} : memref<32x16xf32>
    mtrt.kernel "position_embedding_grad" ins(%194 : memref<8x16xf32>) outs(%195 : memref<32x16xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %196 = mtrt.buffer {kind = "gradient", offset = 78848 : i64} : memref<32x16xf32>
    mtrt.kernel "add" ins(%141, %195 : memref<32x16xf32>, memref<32x16xf32>) outs(%196 : memref<32x16xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %197 = mtrt.buffer {kind = "activation", offset = 58368 : i64} : memref<64x16xf32>
    mtrt.kernel "embedding_grad" ins(%193, %15 : memref<1x8x16xf32>, memref<1x8xi32>) outs(%197 : memref<64x16xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %198 = mtrt.buffer {kind = "activation", offset = 62464 : i64} : memref<64x16xf32>
    mtrt.kernel "add" ins(%142, %197 : memref<64x16xf32>, memref<64x16xf32>) outs(%198 : memref<64x16xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %199 = mtrt.buffer {alias, kind = "activation", offset = 62464 : i64} : memref<64x16xf32>
    mtrt.send %198 to 1 {tag = 4 : i64} : memref<64x16xf32>
    %200 = mtrt.buffer {kind = "activation", offset = 58368 : i64} : memref<64x16xf32>
    %201 = mtrt.buffer {alias, kind = "activation", offset = 58368 : i64} : memref<64x16xf32>
    mtrt.recv %201 from 1 {tag = 5 : i64} : memref<64x16xf32>
    %202 = mtrt.buffer {kind = "gradient", offset = 66560 : i64} : memref<64x16xf32>
    mtrt.kernel "add" ins(%201, %198 : memref<64x16xf32>, memref<64x16xf32>) outs(%202 : memref<64x16xf32>) {} {phase = "optimizer"}
    %203 = mtrt.buffer {kind = "activation", offset = 58368 : i64} : memref<f32>
    mtrt.kernel "sum_squares" ins(%202, %196, %190, %191, %186, %181, %174, %169, %164, %165, %160, %155, %152, %147 : memref<64x16xf32>, memref<32x16xf32>, memref<16xf32>, memref<16xf32>, memref<16x48xf32>, memref<48xf32>, memref<16x16xf32>, memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<16x64xf32>, memref<64xf32>, memref<64x16xf32>, memref<16xf32>) outs(%203 : memref<f32>) {} {phase = "optimizer"}
    %204 = mtrt.buffer {kind = "activation", offset = 58432 : i64} : memref<f32>
    mtrt.kernel "all_reduce" ins(%203 : memref<f32>) outs(%204 : memref<f32>) {average = false, grid_axis = 0 : i64} {phase = "optimizer"}
    %205 = mtrt.buffer {kind = "activation", offset = 58368 : i64} : memref<f32>
    mtrt.kernel "sqrt" ins(%204 : memref<f32>) outs(%205 : memref<f32>) {} {phase = "optimizer"}
    %206 = mtrt.buffer {kind = "activation", offset = 58432 : i64} : memref<f32>
    mtrt.kernel "clip_scale" ins(%205, %16 : memref<f32>, memref<f32>) outs(%206 : memref<f32>) {} {phase = "optimizer"}
    %207 = mtrt.buffer {alias, init = {kind = "normal", std = 2.000000e-02 : f64}, kind = "param", name = "wte.weight", offset = 0 : i64} : memref<64x16xf32>
    %208 = mtrt.buffer {alias, kind = "exp_avg", name = "wte.weight", offset = 19456 : i64} : memref<64x16xf32>
    %209 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "wte.weight", offset = 23552 : i64} : memref<64x16xf32>
    mtrt.kernel "adamw" ins(%0, %202, %17, %18, %19, %20, %21, %22, %23, %24, %206 : memref<64x16xf32>, memref<64x16xf32>, memref<64x16xf32>, memref<64x16xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%207, %208, %209 : memref<64x16xf32>, memref<64x16xf32>, memref<64x16xf32>) {decay} {phase = "optimizer"}
    %210 = mtrt.buffer {alias, init = {kind = "normal", std = 2.000000e-02 : f64}, kind = "param", name = "wpe.weight", offset = 4160 : i64} : memref<32x16xf32>
    %211 = mtrt.buffer {alias, kind = "exp_avg", name = "wpe.weight", offset = 28032 : i64} : memref<32x16xf32>
    %212 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "wpe.weight", offset = 30080 : i64} : memref<32x16xf32>
    mtrt.kernel "adamw" ins(%2, %196, %25, %26, %19, %20, %21, %22, %23, %24, %206 : memref<32x16xf32>, memref<32x16xf32>, memref<32x16xf32>, memref<32x16xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%210, %211, %212 : memref<32x16xf32>, memref<32x16xf32>, memref<32x16xf32>) {decay} {phase = "optimizer"}
    %213 = mtrt.buffer {alias, init = {kind = "ones"}, kind = "param", name = "h.0.ln_1.weight", offset = 6208 : i64} : memref<16xf32>
    %214 = mtrt.buffer {alias, kind = "exp_avg", name = "h.0.ln_1.weight", offset = 32128 : i64} : memref<16xf32>
    %215 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.0.ln_1.weight", offset = 32192 : i64} : memref<16xf32>
    mtrt.kernel "adamw" ins(%3, %190, %27, %28, %19, %20, %21, %22, %23, %24, %206 : memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%213, %214, %215 : memref<16xf32>, memref<16xf32>, memref<16xf32>) {} {phase = "optimizer"}
    %216 = mtrt.buffer {alias, init = {kind = "zeros"}, kind = "param", name = "h.0.ln_1.bias", offset = 6272 : i64} : memref<16xf32>
    %217 = mtrt.buffer {alias, kind = "exp_avg", name = "h.0.ln_1.bias", offset = 32256 : i64} : memref<16xf32>
    %218 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.0.ln_1.bias", offset = 32320 : i64} : memref<16xf32>
    mtrt.kernel "adamw" ins(%4, %191, %29, %30, %19, %20, %21, %22, %23, %24, %206 : memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%216, %217, %218 : memref<16xf32>, memref<16xf32>, memref<16xf32>) {} {phase = "optimizer"}
    %219 = mtrt.buffer {alias, init = {kind = "normal", std = 2.000000e-02 : f64}, kind = "param", name = "h.0.attn.c_attn.weight", offset = 6336 : i64} : memref<16x48xf32>
    %220 = mtrt.buffer {alias, kind = "exp_avg", name = "h.0.attn.c_attn.weight", offset = 32384 : i64} : memref<16x48xf32>
    %221 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.0.attn.c_attn.weight", offset = 35456 : i64} : memref<16x48xf32>
    mtrt.kernel "adamw" ins(%5, %186, %31, %32, %19, %20, %21, %22, %23, %24, %206 : memref<16x48xf32>, memref<16x48xf32>, memref<16x48xf32>, memref<16x48xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%219, %220, %221 : memref<16x48xf32>, memref<16x48xf32>, memref<16x48xf32>) {decay} {phase = "optimizer"}
    %222 = mtrt.buffer {alias, init = {kind = "zeros"}, kind = "param", name = "h.0.attn.c_attn.bias", offset = 9408 : i64} : memref<48xf32>
    %223 = mtrt.buffer {alias, kind = "exp_avg", name = "h.0.attn.c_attn.bias", offset = 38528 : i64} : memref<48xf32>
    %224 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.0.attn.c_attn.bias", offset = 38720 : i64} : memref<48xf32>
    mtrt.kernel "adamw" ins(%6, %181, %33, %34, %19, %20, %21, %22, %23, %24, %206 : memref<48xf32>, memref<48xf32>, memref<48xf32>, memref<48xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%222, %223, %224 : memref<48xf32>, memref<48xf32>, memref<48xf32>) {} {phase = "optimizer"}
    %225 = mtrt.buffer {alias, init = {kind = "normal", std = 1.000000e-02 : f64}, kind = "param", name = "h.0.attn.c_proj.weight", offset = 9600 : i64} : memref<16x16xf32>
    %226 = mtrt.buffer {alias, kind = "exp_avg", name = "h.0.attn.c_proj.weight", offset = 38912 : i64} : memref<16x16xf32>
    %227 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.0.attn.c_proj.weight", offset = 39936 : i64} : memref<16x16xf32>
    mtrt.kernel "adamw" ins(%7, %174, %35, %36, %19, %20, %21, %22, %23, %24, %206 : memref<16x16xf32>, memref<16x16xf32>, memref<16x16xf32>, memref<16x16xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%225, %226, %227 : memref<16x16xf32>, memref<16x16xf32>, memref<16x16xf32>) {decay} {phase = "optimizer"}
    %228 = mtrt.buffer {alias, init = {kind = "zeros"}, kind = "param", name = "h.0.attn.c_proj.bias", offset = 10624 : i64} : memref<16xf32>
    %229 = mtrt.buffer {alias, kind = "exp_avg", name = "h.0.attn.c_proj.bias", offset = 40960 : i64} : memref<16xf32>
    %230 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.0.attn.c_proj.bias", offset = 41024 : i64} : memref<16xf32>
    mtrt.kernel "adamw" ins(%8, %169, %37, %38, %19, %20, %21, %22, %23, %24, %206 : memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%228, %229, %230 : memref<16xf32>, memref<16xf32>, memref<16xf32>) {} {phase = "optimizer"}
    %231 = mtrt.buffer {alias, init = {kind = "ones"}, kind = "param", name = "h.0.ln_2.weight", offset = 10688 : i64} : memref<16xf32>
    %232 = mtrt.buffer {alias, kind = "exp_avg", name = "h.0.ln_2.weight", offset = 41088 : i64} : memref<16xf32>
    %233 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.0.ln_2.weight", offset = 41152 : i64} : memref<16xf32>
    mtrt.kernel "adamw" ins(%9, %164, %39, %40, %19, %20, %21, %22, %23, %24, %206 : memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%231, %232, %233 : memref<16xf32>, memref<16xf32>, memref<16xf32>) {} {phase = "optimizer"}
    %234 = mtrt.buffer {alias, init = {kind = "zeros"}, kind = "param", name = "h.0.ln_2.bias", offset = 10752 : i64} : memref<16xf32>
    %235 = mtrt.buffer {alias, kind = "exp_avg", name = "h.0.ln_2.bias", offset = 41216 : i64} : memref<16xf32>
    %236 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.0.ln_2.bias", offset = 41280 : i64} : memref<16xf32>
    mtrt.kernel "adamw" ins(%10, %165, %41, %42, %19, %20, %21, %22, %23, %24, %206 : memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%234, %235, %236 : memref<16xf32>, memref<16xf32>, memref<16xf32>) {} {phase = "optimizer"}
    %237 = mtrt.buffer {alias, init = {kind = "normal", std = 2.000000e-02 : f64}, kind = "param", name = "h.0.mlp.c_fc.weight", offset = 10816 : i64} : memref<16x64xf32>
    %238 = mtrt.buffer {alias, kind = "exp_avg", name = "h.0.mlp.c_fc.weight", offset = 41344 : i64} : memref<16x64xf32>
    %239 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.0.mlp.c_fc.weight", offset = 45440 : i64} : memref<16x64xf32>
    mtrt.kernel "adamw" ins(%11, %160, %43, %44, %19, %20, %21, %22, %23, %24, %206 : memref<16x64xf32>, memref<16x64xf32>, memref<16x64xf32>, memref<16x64xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%237, %238, %239 : memref<16x64xf32>, memref<16x64xf32>, memref<16x64xf32>) {decay} {phase = "optimizer"}
    %240 = mtrt.buffer {alias, init = {kind = "zeros"}, kind = "param", name = "h.0.mlp.c_fc.bias", offset = 14912 : i64} : memref<64xf32>
    %241 = mtrt.buffer {alias, kind = "exp_avg", name = "h.0.mlp.c_fc.bias", offset = 49536 : i64} : memref<64xf32>
    %242 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.0.mlp.c_fc.bias", offset = 49792 : i64} : memref<64xf32>
    mtrt.kernel "adamw" ins(%12, %155, %45, %46, %19, %20, %21, %22, %23, %24, %206 : memref<64xf32>, memref<64xf32>, memref<64xf32>, memref<64xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%240, %241, %242 : memref<64xf32>, memref<64xf32>, memref<64xf32>) {} {phase = "optimizer"}
    %243 = mtrt.buffer {alias, init = {kind = "normal", std = 1.000000e-02 : f64}, kind = "param", name = "h.0.mlp.c_proj.weight", offset = 15168 : i64} : memref<64x16xf32>
    %244 = mtrt.buffer {alias, kind = "exp_avg", name = "h.0.mlp.c_proj.weight", offset = 50048 : i64} : memref<64x16xf32>
    %245 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.0.mlp.c_proj.weight", offset = 54144 : i64} : memref<64x16xf32>
    mtrt.kernel "adamw" ins(%13, %152, %47, %48, %19, %20, %21, %22, %23, %24, %206 : memref<64x16xf32>, memref<64x16xf32>, memref<64x16xf32>, memref<64x16xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%243, %244, %245 : memref<64x16xf32>, memref<64x16xf32>, memref<64x16xf32>) {decay} {phase = "optimizer"}
    %246 = mtrt.buffer {alias, init = {kind = "zeros"}, kind = "param", name = "h.0.mlp.c_proj.bias", offset = 19264 : i64} : memref<16xf32>
    %247 = mtrt.buffer {alias, kind = "exp_avg", name = "h.0.mlp.c_proj.bias", offset = 58240 : i64} : memref<16xf32>
    %248 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.0.mlp.c_proj.bias", offset = 58304 : i64} : memref<16xf32>
    mtrt.kernel "adamw" ins(%14, %147, %49, %50, %19, %20, %21, %22, %23, %24, %206 : memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%246, %247, %248 : memref<16xf32>, memref<16xf32>, memref<16xf32>) {} {phase = "optimizer"}
    mtrt.output "grad_norm", %205 : memref<f32>
  }
  mtrt.program @stage1 attributes {arena_bytes = 88900 : i64, flops_per_token = 51840 : i64, persistent_bytes = 52608 : i64, stage = 1 : i64} {
    %0 = mtrt.buffer {init = {kind = "ones"}, kind = "param", name = "h.1.ln_1.weight", offset = 0 : i64} : memref<16xf32>
    %1 = mtrt.buffer {init = {kind = "zeros"}, kind = "param", name = "h.1.ln_1.bias", offset = 64 : i64} : memref<16xf32>
    %2 = mtrt.buffer {init = {kind = "normal", std = 2.000000e-02 : f64}, kind = "param", name = "h.1.attn.c_attn.weight", offset = 128 : i64} : memref<16x48xf32>
    %3 = mtrt.buffer {init = {kind = "zeros"}, kind = "param", name = "h.1.attn.c_attn.bias", offset = 3200 : i64} : memref<48xf32>
    %4 = mtrt.buffer {init = {kind = "normal", std = 1.000000e-02 : f64}, kind = "param", name = "h.1.attn.c_proj.weight", offset = 3392 : i64} : memref<16x16xf32>
    %5 = mtrt.buffer {init = {kind = "zeros"}, kind = "param", name = "h.1.attn.c_proj.bias", offset = 4416 : i64} : memref<16xf32>
    %6 = mtrt.buffer {init = {kind = "ones"}, kind = "param", name = "h.1.ln_2.weight", offset = 4480 : i64} : memref<16xf32>
    %7 = mtrt.buffer {init = {kind = "zeros"}, kind = "param", name = "h.1.ln_2.bias", offset = 4544 : i64} : memref<16xf32>
    %8 = mtrt.buffer {init = {kind = "normal", std = 2.000000e-02 : f64}, kind = "param", name = "h.1.mlp.c_fc.weight", offset = 4608 : i64} : memref<16x64xf32>
    %9 = mtrt.buffer {init = {kind = "zeros"}, kind = "param", name = "h.1.mlp.c_fc.bias", offset = 8704 : i64} : memref<64xf32>
    %10 = mtrt.buffer {init = {kind = "normal", std = 1.000000e-02 : f64}, kind = "param", name = "h.1.mlp.c_proj.weight", offset = 8960 : i64} : memref<64x16xf32>
    %11 = mtrt.buffer {init = {kind = "zeros"}, kind = "param", name = "h.1.mlp.c_proj.bias", offset = 13056 : i64} : memref<16xf32>
    %12 = mtrt.buffer {init = {kind = "ones"}, kind = "param", name = "ln_f.weight", offset = 13120 : i64} : memref<16xf32>
    %13 = mtrt.buffer {init = {kind = "zeros"}, kind = "param", name = "ln_f.bias", offset = 13184 : i64} : memref<16xf32>
    %14 = mtrt.buffer {init = {kind = "normal", std = 2.000000e-02 : f64}, kind = "param", name = "wte.weight", offset = 13248 : i64} : memref<64x16xf32>
    %15 = mtrt.buffer {kind = "input", microbatch = 0 : i64, name = "labels", offset = 17344 : i64} : memref<1x8xi32>
    %16 = mtrt.buffer {kind = "input", microbatch = 1 : i64, name = "labels", offset = 17408 : i64} : memref<1x8xi32>
    %17 = mtrt.buffer {kind = "input", name = "clip_grad", offset = 17472 : i64} : memref<f32>
    %18 = mtrt.buffer {kind = "exp_avg", name = "wte.weight", offset = 17536 : i64} : memref<64x16xf32>
    %19 = mtrt.buffer {kind = "exp_avg_sq", name = "wte.weight", offset = 21632 : i64} : memref<64x16xf32>
    %20 = mtrt.buffer {kind = "input", name = "step", offset = 25728 : i64} : memref<f32>
    %21 = mtrt.buffer {kind = "input", name = "lr", offset = 25792 : i64} : memref<f32>
    %22 = mtrt.buffer {kind = "input", name = "adam_beta1", offset = 25856 : i64} : memref<f32>
    %23 = mtrt.buffer {kind = "input", name = "adam_beta2", offset = 25920 : i64} : memref<f32>
    %24 = mtrt.buffer {kind = "input", name = "adam_eps", offset = 25984 : i64} : memref<f32>
    %25 = mtrt.buffer {kind = "input", name = "weight_decay", offset = 26048 : i64} : memref<f32>
    %26 = mtrt.buffer {kind = "exp_avg", name = "h.1.ln_1.weight", offset = 26112 : i64} : memref<16xf32>
    %27 = mtrt.buffer {kind = "exp_avg_sq", name = "h.1.ln_1.weight", offset = 26176 : i64} : memref<16xf32>
    %28 = mtrt.buffer {kind = "exp_avg", name = "h.1.ln_1.bias", offset = 26240 : i64} : memref<16xf32>
    %29 = mtrt.buffer {kind = "exp_avg_sq", name = "h.1.ln_1.bias", offset = 26304 : i64} : memref<16xf32>
    %30 = mtrt.buffer {kind = "exp_avg", name = "h.1.attn.c_attn.weight", offset = 26368 : i64} : memref<16x48xf32>
    %31 = mtrt.buffer {kind = "exp_avg_sq", name = "h.1.attn.c_attn.weight", offset = 29440 : i64} : memref<16x48xf32>
    %32 = mtrt.buffer {kind = "exp_avg", name = "h.1.attn.c_attn.bias", offset = 32512 : i64} : memref<48xf32>
    %33 = mtrt.buffer {kind = "exp_avg_sq", name = "h.1.attn.c_attn.bias", offset = 32704 : i64} : memref<48xf32>
    %34 = mtrt.buffer {kind = "exp_avg", name = "h.1.attn.c_proj.weight", offset = 32896 : i64} : memref<16x16xf32>
    %35 = mtrt.buffer {kind = "exp_avg_sq", name = "h.1.attn.c_proj.weight", offset = 33920 : i64} : memref<16x16xf32>
    %36 = mtrt.buffer {kind = "exp_avg", name = "h.1.attn.c_proj.bias", offset = 34944 : i64} : memref<16xf32>
    %37 = mtrt.buffer {kind = "exp_avg_sq", name = "h.1.attn.c_proj.bias", offset = 35008 : i64} : memref<16xf32>
    %38 = mtrt.buffer {kind = "exp_avg", name = "h.1.ln_2.weight", offset = 35072 : i64} : memref<16xf32>
    %39 = mtrt.buffer {kind = "exp_avg_sq", name = "h.1.ln_2.weight", offset = 35136 : i64} : memref<16xf32>
    %40 = mtrt.buffer {kind = "exp_avg", name = "h.1.ln_2.bias", offset = 35200 : i64} : memref<16xf32>
    %41 = mtrt.buffer {kind = "exp_avg_sq", name = "h.1.ln_2.bias", offset = 35264 : i64} : memref<16xf32>
    %42 = mtrt.buffer {kind = "exp_avg", name = "h.1.mlp.c_fc.weight", offset = 35328 : i64} : memref<16x64xf32>
    %43 = mtrt.buffer {kind = "exp_avg_sq", name = "h.1.mlp.c_fc.weight", offset = 39424 : i64} : memref<16x64xf32>
    %44 = mtrt.buffer {kind = "exp_avg", name = "h.1.mlp.c_fc.bias", offset = 43520 : i64} : memref<64xf32>
    %45 = mtrt.buffer {kind = "exp_avg_sq", name = "h.1.mlp.c_fc.bias", offset = 43776 : i64} : memref<64xf32>
    %46 = mtrt.buffer {kind = "exp_avg", name = "h.1.mlp.c_proj.weight", offset = 44032 : i64} : memref<64x16xf32>
    %47 = mtrt.buffer {kind = "exp_avg_sq", name = "h.1.mlp.c_proj.weight", offset = 48128 : i64} : memref<64x16xf32>
    %48 = mtrt.buffer {kind = "exp_avg", name = "h.1.mlp.c_proj.bias", offset = 52224 : i64} : memref<16xf32>
    %49 = mtrt.buffer {kind = "exp_avg_sq", name = "h.1.mlp.c_proj.bias", offset = 52288 : i64} : memref<16xf32>
    %50 = mtrt.buffer {kind = "exp_avg", name = "ln_f.weight", offset = 52352 : i64} : memref<16xf32>
    %51 = mtrt.buffer {kind = "exp_avg_sq", name = "ln_f.weight", offset = 52416 : i64} : memref<16xf32>
    %52 = mtrt.buffer {kind = "exp_avg", name = "ln_f.bias", offset = 52480 : i64} : memref<16xf32>
    %53 = mtrt.buffer {kind = "exp_avg_sq", name = "ln_f.bias", offset = 52544 : i64} : memref<16xf32>
    %54 = mtrt.buffer {kind = "constant", offset = 80768 : i64} : memref<f32>
    mtrt.fill %54, 5.000000e-01 : memref<f32>
    %55 = mtrt.buffer {kind = "activation", offset = 68992 : i64} : memref<1x8x16xf32>
    %56 = mtrt.buffer {alias, kind = "activation", offset = 68992 : i64} : memref<1x8x16xf32>
    mtrt.recv %56 from 0 {microbatch = 0 : i64, tag = 0 : i64} : memref<1x8x16xf32>
    %57 = mtrt.buffer {kind = "activation", offset = 69504 : i64} : memref<1x8x16xf32>
    mtrt.kernel "layer_norm" ins(%56, %0, %1 : memref<1x8x16xf32>, memref<16xf32>, memref<16xf32>) outs(%57 : memref<1x8x16xf32>) {epsilon = 1.000000e-05 : f64} {layer = 1 : i64, microbatch = 0 : i64, phase = "forward"}
    %58 = mtrt.buffer {kind = "activation", offset = 52608 : i64} : memref<1x8x48xf32>
    mtrt.kernel "matmul" ins(%57, %2 : memref<1x8x16xf32>, memref<16x48xf32>) outs(%58 : memref<1x8x48xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "forward"}
    %59 = mtrt.buffer {kind = "activation", offset = 54144 : i64} : memref<1x8x48xf32>
    mtrt.kernel "bias_add" ins(%58, %3 : memref<1x8x48xf32>, memref<48xf32>) outs(%59 : memref<1x8x48xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "forward"}
    %60 = mtrt.buffer {kind = "activation", offset = 70016 : i64} : memref<1x2x8x8xf32>
    %61 = mtrt.buffer {kind = "activation", offset = 70528 : i64} : memref<1x2x8x8xf32>
    %62 = mtrt.buffer {kind = "activation", offset = 71040 : i64} : memref<1x2x8x8xf32>
    mtrt.kernel "split_heads" ins(%59 : memref<1x8x48xf32>) outs(%60, %61, %62 : memref<1x2x8x8xf32>, memref<1x2x8x8xf32>, memref<1x2x8x8xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "forward"}
    %63 = mtrt.buffer {kind = "activation", offset = 52608 : i64} : memref<1x2x8x8xf32>
    mtrt.kernel "attention" ins(%60, %61, %62 : memref<1x2x8x8xf32>, memref<1x2x8x8xf32>, memref<1x2x8x8xf32>) outs(%63 : memref<1x2x8x8xf32>) {dropout = 1.000000e-01 : f64, rng_stream = 4 : i64} {layer = 1 : i64, microbatch = 0 : i64, phase = "forward"}
    %64 = mtrt.buffer {kind = "activation", offset = 71552 : i64} : memref<1x8x16xf32>
    mtrt.kernel "merge_heads" ins(%63 : memref<1x2x8x8xf32>) outs(%64 : memref<1x8x16xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "forward"}
    %65 = mtrt.buffer {kind = "activation", offset = 52608 : i64} : memref<1x8x16xf32>
    mtrt.kernel "matmul" ins(%64, %4 : memref<1x8x16xf32>, memref<16x16xf32>) outs(%65 : memref<1x8x16xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "forward"}
    %66 = mtrt.buffer {kind = "activation", offset = 53120 : i64} : memref<1x8x16xf32>
    mtrt.kernel "bias_add" ins(%65, %5 : memref<1x8x16xf32>, memref<16xf32>) outs(%66 : memref<1x8x16xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "forward"}
    %67 = mtrt.buffer {kind = "activation", offset = 52608 : i64} : memref<1x8x16xf32>
    mtrt.kernel "dropout" ins(%66 : memref<1x8x16xf32>) outs(%67 : memref<1x8x16xf32>) {probability = 1.000000e-01 : f64, rng_stream = 5 : i64} {layer = 1 : i64, microbatch = 0 : i64, phase = "forward"}
    %68 = mtrt.buffer {kind = "activation", offset = 72064 : i64} : memref<1x8x16xf32>
    mtrt.kernel "add" ins(%56, %67 : memref<1x8x16xf32>, memref<1x8x16xf32>) outs(%68 : memref<1x8x16xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "forward"}
    %69 = mtrt.buffer {kind = "activation", offset = 72576 : i64} : memref<1x8x16xf32>
    mtrt.kernel "layer_norm" ins(%68, %6, %7 : memref<1x8x16xf32>, memref<16xf32>, memref<16xf32>) outs(%69 : memref<1x8x16xf32>) {epsilon = 1.000000e-05 : f64} {layer = 1 : i64, microbatch = 0 : i64, phase = "forward"}
    %70 = mtrt.buffer {kind = "activation", offset = 52608 : i64} : memref<1x8x64xf32>
    mtrt.kernel "matmul" ins(%69, %8 : memref<1x8x16xf32>, memref<16x64xf32>) outs(%70 : memref<1x8x64xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "forward"}
    %71 = mtrt.buffer {kind = "activation", offset = 60800 : i64} : memref<1x8x64xf32>
    mtrt.kernel "bias_add" ins(%70, %9 : memref<1x8x64xf32>, memref<64xf32>) outs(%71 : memref<1x8x64xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "forward"}
    %72 = mtrt.buffer {kind = "activation", offset = 62848 : i64} : memref<1x8x64xf32>
    mtrt.kernel "gelu" ins(%71 : memref<1x8x64xf32>) outs(%72 : memref<1x8x64xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "forward"}
    %73 = mtrt.buffer {kind = "activation", offset = 52608 : i64} : memref<1x8x16xf32>
    mtrt.kernel "matmul" ins(%72, %10 : memref<1x8x64xf32>, memref<64x16xf32>) outs(%73 : memref<1x8x16xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "forward"}
    %74 = mtrt.buffer {kind = "activation", offset = 53120 : i64} : memref<1x8x16xf32>
    mtrt.kernel "bias_add" ins(%73, %11 : memref<1x8x16xf32>, memref<16xf32>) outs(%74 : memref<1x8x16xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "forward"}
    %75 = mtrt.buffer {kind = "activation", offset = 52608 : i64} : memref<1x8x16xf32>
    mtrt.kernel "dropout" ins(%74 : memref<1x8x16xf32>) outs(%75 : memref<1x8x16xf32>) {probability = 1.000000e-01 : f64, rng_stream = 6 : i64} {layer = 1 : i64, microbatch = 0 : i64, phase = "forward"}
    %76 = mtrt.buffer {kind = "activation", offset = 58752 : i64} : memref<1x8x16xf32>
    mtrt.kernel "add" ins(%68, %75 : memref<1x8x16xf32>, memref<1x8x16xf32>) outs(%76 : memref<1x8x16xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "forward"}
    %77 = mtrt.buffer {kind = "activation", offset = 59264 : i64} : memref<1x8x16xf32>
    mtrt.kernel "layer_norm" ins(%76, %12, %13 : memref<1x8x16xf32>, memref<16xf32>, memref<16xf32>) outs(%77 : memref<1x8x16xf32>) {epsilon = 1.000000e-05 : f64} {microbatch = 0 : i64, phase = "forward"}
    %78 = mtrt.buffer {kind = "activation", offset = 52608 : i64} : memref<1x8x64xf32>
    mtrt.kernel "matmul" ins(%77, %14 : memref<1x8x16xf32>, memref<64x16xf32>) outs(%78 : memref<1x8x64xf32>) {transpose_b} {microbatch = 0 : i64, phase = "forward"}
    %79 = mtrt.buffer {kind = "activation", offset = 80832 : i64} : memref<f32>
    mtrt.kernel "cross_entropy" ins(%78, %15 : memref<1x8x64xf32>, memref<1x8xi32>) outs(%79 : memref<f32>) {} {microbatch = 0 : i64, phase = "forward"}
    %80 = mtrt.buffer {kind = "activation", offset = 56704 : i64} : memref<1x8x64xf32>
    mtrt.kernel "cross_entropy_grad" ins(%54, %78, %15 : memref<f32>, memref<1x8x64xf32>, memref<1x8xi32>) outs(%80 : memref<1x8x64xf32>) {} {microbatch = 0 : i64, phase = "backward"}
    %81 = mtrt.buffer {kind = "activation", offset = 59776 : i64} : memref<1x8x16xf32>
    mtrt.kernel "matmul" ins(%80, %14 : memref<1x8x64xf32>, memref<64x16xf32>) outs(%81 : memref<1x8x16xf32>) {} {microbatch = 0 : i64, phase = "backward"}
    %82 = mtrt.buffer {alias, kind = "activation", offset = 59264 : i64} : memref<8x16xf32>
    %83 = mtrt.buffer {alias, kind = "activation", offset = 56704 : i64} : memref<8x64xf32>
    %84 = mtrt.buffer {kind = "activation", offset = 52608 : i64} : memref<64x16xf32>
    mtrt.kernel "matmul" ins(%83, %82 : memref<8x64xf32>, memref<8x16xf32>) outs(%84 : memref<64x16xf32>) {transpose_a} {microbatch = 0 : i64, phase = "backward"}
    %85 = mtrt.buffer {kind = "activation", offset = 73088 : i64} : memref<1x8x16xf32>
    %86 = mtrt.buffer {kind = "activation", offset = 81280 : i64} : memref<16xf32>
    %87 = mtrt.buffer {kind = "activation", offset = 81344 : i64} : memref<16xf32>
    mtrt.kernel "layer_norm_grad" ins(%81, %76, %12 : memref<1x8x16xf32>, memref<1x8x16xf32>, memref<16xf32>) outs(%85, %86, %87 : memref<1x8x16xf32>, memref<16xf32>, memref<16xf32>) {epsilon = 1.000000e-05 : f64} {microbatch = 0 : i64, phase = "backward"}
    %88 = mtrt.buffer {kind = "activation", offset = 66944 : i64} : memref<1x8x16xf32>
    mtrt.kernel "dropout" ins(%85 : memref<1x8x16xf32>) outs(%88 : memref<1x8x16xf32>) {probability = 1.000000e-01 : f64, rng_stream = 6 : i64} {layer = 1 : i64, microbatch = 0 : i64, phase = "backward"}
    %89 = mtrt.buffer {kind = "activation", offset = 81408 : i64} : memref<16xf32>
    mtrt.kernel "bias_add_grad" ins(%88 : memref<1x8x16xf32>) outs(%89 : memref<16xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "backward"}
    %90 = mtrt.buffer {kind = "activation", offset = 64896 : i64} : memref<1x8x64xf32>
    mtrt.kernel "matmul" ins(%88, %10 : memref<1x8x16xf32>, memref<64x16xf32>) outs(%90 : memref<1x8x64xf32>) {transpose_b} {layer = 1 : i64, microbatch = 0 : i64, phase = "backward"}
    %91 = mtrt.buffer {alias, kind = "activation", offset = 62848 : i64} : memref<8x64xf32>
    %92 = mtrt.buffer {alias, kind = "activation", offset = 66944 : i64} : memref<8x16xf32>
    %93 = mtrt.buffer {kind = "activation", offset = 56704 : i64} : memref<64x16xf32>
    mtrt.kernel "matmul" ins(%91, %92 : memref<8x64xf32>, memref<8x16xf32>) outs(%93 : memref<64x16xf32>) {transpose_a} {layer = 1 : i64, microbatch = 0 : i64, phase = "backward"}
    %94 = mtrt.buffer {kind = "activation", offset = 66944 : i64} : memref<1x8x64xf32>
    mtrt.kernel "gelu_grad" ins(%90, %71 : memref<1x8x64xf32>, memref<1x8x64xf32>) outs(%94 : memref<1x8x64xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "backward"}
    %95 = mtrt.buffer {kind = "activation", offset = 87936 : i64} : memref<64xf32>
    mtrt.kernel "bias_add_grad" ins(%94 : memref<1x8x64xf32>) outs(%95 : memref<64xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "backward"}
    %96 = mtrt.buffer {kind = "activation", offset = 64896 : i64} : memref<1x8x16xf32>
    mtrt.kernel "matmul" ins(%94, %8 : memref<1x8x64xf32>, memref<16x64xf32>) outs(%96 : memref<1x8x16xf32>) {transpose_b} {layer = 1 : i64, microbatch = 0 : i64, phase = "backward"}
    %97 = mtrt.buffer {alias, kind = "activation", offset = 72576 : i64} : memref<8x16xf32>
    %98 = mtrt.buffer {alias, kind = "activation", offset = 66944 : i64} : memref<8x64xf32>
    %99 = mtrt.buffer {kind = "activation", offset = 60800 : i64} : memref<16x64xf32>
    mtrt.kernel "matmul" ins(%97, %98 : memref<8x16xf32>, memref<8x64xf32>) outs(%99 : memref<16x64xf32>) {transpose_a} {layer = 1 : i64, microbatch = 0 : i64, phase = "backward"}
    %100 = mtrt.buffer {kind = "activation", offset = 65408 : i64} : memref<1x8x16xf32>
    %101 = mtrt.buffer {kind = "activation", offset = 88384 : i64} : memref<16xf32>
    %102 = mtrt.buffer {kind = "activation", offset = 88448 : i64} : memref<16xf32>
    mtrt.kernel "layer_norm_grad" ins(%96, %68, %6 : memref<1x8x16xf32>, memref<1x8x16xf32>, memref<16xf32>) outs(%100, %101, %102 : memref<1x8x16xf32>, memref<16xf32>, memref<16xf32>) {epsilon = 1.000000e-05 : f64} {layer = 1 : i64, microbatch = 0 : i64, phase = "backward"}
    %103 = mtrt.buffer {kind = "activation", offset = 66432 : i64} : memref<1x8x16xf32>
    mtrt.kernel "add" ins(%85, %100 : memref<1x8x16xf32>, memref<1x8x16xf32>) outs(%103 : memref<1x8x16xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "backward"}
    %104 = mtrt.buffer {kind = "activation", offset = 64896 : i64} : memref<1x8x16xf32>
    mtrt.kernel "dropout" ins(%103 : memref<1x8x16xf32>) outs(%104 : memref<1x8x16xf32>) {probability = 1.000000e-01 : f64, rng_stream = 5 : i64} {layer = 1 : i64, microbatch = 0 : i64, phase = "backward"}
    %105 = mtrt.buffer {kind = "activation", offset = 88512 : i64} : memref<16xf32>
    mtrt.kernel "bias_add_grad" ins(%104 : memref<1x8x16xf32>) outs(%105 : memref<16xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "backward"}
    %106 = mtrt.buffer {kind = "activation", offset = 65408 : i64} : memref<1x8x16xf32>
    mtrt.kernel "matmul" ins(%104, %4 : memref<1x8x16xf32>, memref<16x16xf32>) outs(%106 : memref<1x8x16xf32>) {transpose_b} {layer = 1 : i64, microbatch = 0 : i64, phase = "backward"}
    %107 = mtrt.buffer {alias, kind = "activation", offset = 71552 : i64} : memref<8x16xf32>
    %108 = mtrt.buffer {alias, kind = "activation", offset = 64896 : i64} : memref<8x16xf32>
    %109 = mtrt.buffer {kind = "activation", offset = 82304 : i64} : memref<16x16xf32>
    mtrt.kernel "matmul" ins(%107, %108 : memref<8x16xf32>, memref<8x16xf32>) outs(%109 : memref<16x16xf32>) {transpose_a} {layer = 1 : i64, microbatch = 0 : i64, phase = "backward"}
    %110 = mtrt.buffer {kind = "activation", offset = 64896 : i64} : memref<1x2x8x8xf32>
    mtrt.kernel "split_heads" ins(%106 : memref<1x8x16xf32>) outs(%110 : memref<1x2x8x8xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "backward"}
    %111 = mtrt.buffer {kind = "activation", offset = 66944 : i64} : memref<1x2x8x8xf32>
    %112 = mtrt.buffer {kind = "activation", offset = 67456 : i64} : memref<1x2x8x8xf32>
    %113 = mtrt.buffer {kind = "activation", offset = 67968 : i64} : memref<1x2x8x8xf32>
    mtrt.kernel "attention_grad" ins(%110, %60, %61, %62 : memref<1x2x8x8xf32>, memref<1x2x8x8xf32>, memref<1x2x8x8xf32>, memref<1x2x8x8xf32>) outs(%111, %112, %113 : memref<1x2x8x8xf32>, memref<1x2x8x8xf32>, memref<1x2x8x8xf32>) {dropout = 1.000000e-01 : f64, rng_stream = 4 : i64} {layer = 1 : i64, microbatch = 0 : i64, phase = "backward"}
    %114 = mtrt.buffer {kind = "activation", offset = 64896 : i64} : memref<1x8x48xf32>
    mtrt.kernel "merge_heads" ins(%111, %112, %113 : memref<1x2x8x8xf32>, memref<1x2x8x8xf32>, memref<1x2x8x8xf32>) outs(%114 : memref<1x8x48xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "backward"}
    %115 = mtrt.buffer {kind = "activation", offset = 88192 : i64} : memref<48xf32>
    mtrt.kernel "bias_add_grad" ins(%114 : memref<1x8x48xf32>) outs(%115 : memref<48xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "backward"}
    %116 = mtrt.buffer {kind = "activation", offset = 66944 : i64} : memref<1x8x16xf32>
    mtrt.kernel "matmul" ins(%114, %2 : memref<1x8x48xf32>, memref<16x48xf32>) outs(%116 : memref<1x8x16xf32>) {transpose_b} {layer = 1 : i64, microbatch = 0 : i64, phase = "backward"}
    %117 = mtrt.buffer {alias, kind = "activation", offset = 69504 : i64} : memref<8x16xf32>
    %118 = mtrt.buffer {alias, kind = "activation", offset = 64896 : i64} : memref<8x48xf32>
    %119 = mtrt.buffer {kind = "activation", offset = 73088 : i64} : memref<16x48xf32>
    mtrt.kernel "matmul" ins(%117, %118 : memref<8x16xf32>, memref<8x48xf32>) outs(%119 : memref<16x48xf32>) {transpose_a} {layer = 1 : i64, microbatch = 0 : i64, phase = "backward"}
    %120 = mtrt.buffer {kind = "activation", offset = 64896 : i64} : memref<1x8x16xf32>
    %121 = mtrt.buffer {kind = "activation", offset = 88576 : i64} : memref<16xf32>
    %122 = mtrt.buffer {kind = "activation", offset = 88640 : i64} : memref<16xf32>
    mtrt.kernel "layer_norm_grad" ins(%116, %56, %0 : memref<1x8x16xf32>, memref<1x8x16xf32>, memref<16xf32>) outs(%120, %121, %122 : memref<1x8x16xf32>, memref<16xf32>, memref<16xf32>) {epsilon = 1.000000e-05 : f64} {layer = 1 : i64, microbatch = 0 : i64, phase = "backward"}
    %123 = mtrt.buffer {kind = "activation", offset = 65408 : i64} : memref<1x8x16xf32>
    mtrt.kernel "add" ins(%103, %120 : memref<1x8x16xf32>, memref<1x8x16xf32>) outs(%123 : memref<1x8x16xf32>) {} {layer = 1 : i64, microbatch = 0 : i64, phase = "backward"}
    %124 = mtrt.buffer {alias, kind = "activation", offset = 65408 : i64} : memref<1x8x16xf32>
    mtrt.send %123 to 0 {microbatch = 0 : i64, tag = 2 : i64} : memref<1x8x16xf32>
    %125 = mtrt.buffer {kind = "activation", offset = 83328 : i64} : memref<1x8x16xf32>
    %126 = mtrt.buffer {alias, kind = "activation", offset = 83328 : i64} : memref<1x8x16xf32>
    mtrt.recv %126 from 0 {microbatch = 1 : i64, tag = 1 : i64} : memref<1x8x16xf32>
    %127 = mtrt.buffer {kind = "activation", offset = 83840 : i64} : memref<1x8x16xf32>
    mtrt.kernel "layer_norm" ins(%126, %0, %1 : memref<1x8x16xf32>, memref<16xf32>, memref<16xf32>) outs(%127 : memref<1x8x16xf32>) {epsilon = 1.000000e-05 : f64} {layer = 1 : i64, microbatch = 1 : i64, phase = "forward"}
    %128 = mtrt.buffer {kind = "activation", offset = 64896 : i64} : memref<1x8x48xf32>
    mtrt.kernel "matmul" ins(%127, %2 : memref<1x8x16xf32>, memref<16x48xf32>) outs(%128 : memref<1x8x48xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "forward"}
    %129 = mtrt.buffer {kind = "activation", offset = 66432 : i64} : memref<1x8x48xf32>
    mtrt.kernel "bias_add" ins(%128, %3 : memref<1x8x48xf32>, memref<48xf32>) outs(%129 : memref<1x8x48xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "forward"}
    %130 = mtrt.buffer {kind = "activation", offset = 84352 : i64} : memref<1x2x8x8xf32>
    %131 = mtrt.buffer {kind = "activation", offset = 84864 : i64} : memref<1x2x8x8xf32>
    %132 = mtrt.buffer {kind = "activation", offset = 85376 : i64} : memref<1x2x8x8xf32>
    mtrt.kernel "split_heads" ins(%129 : memref<1x8x48xf32>) outs(%130, %131, %132 : memref<1x2x8x8xf32>, memref<1x2x8x8xf32>, memref<1x2x8x8xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "forward"}
    %133 = mtrt.buffer {kind = "activation", offset = 64896 : i64} : memref<1x2x8x8xf32>
    mtrt.kernel "attention" ins(%130, %131, %132 : memref<1x2x8x8xf32>, memref<1x2x8x8xf32>, memref<1x2x8x8xf32>) outs(%133 : memref<1x2x8x8xf32>) {dropout = 1.000000e-01 : f64, rng_offset = 128 : i64, rng_stream = 4 : i64} {layer = 1 : i64, microbatch = 1 : i64, phase = "forward"}
    %134 = mtrt.buffer {kind = "activation", offset = 85888 : i64} : memref<1x8x16xf32>
    mtrt.kernel "merge_heads" ins(%133 : memref<1x2x8x8xf32>) outs(%134 : memref<1x8x16xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "forward"}
    %135 = mtrt.buffer {kind = "activation", offset = 64896 : i64} : memref<1x8x16xf32>
    mtrt.kernel "matmul" ins(%134, %4 : memref<1x8x16xf32>, memref<16x16xf32>) outs(%135 : memref<1x8x16xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "forward"}
    %136 = mtrt.buffer {kind = "activation", offset = 65408 : i64} : memref<1x8x16xf32>
    mtrt.kernel "bias_add" ins(%135, %5 : memref<1x8x16xf32>, memref<16xf32>) outs(%136 : memref<1x8x16xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "forward"}
    %137 = mtrt.buffer {kind = "activation", offset = 64896 : i64} : memref<1x8x16xf32>
    mtrt.kernel "dropout" ins(%136 : memref<1x8x16xf32>) outs(%137 : memref<1x8x16xf32>) {probability = 1.000000e-01 : f64, rng_offset = 128 : i64, rng_stream = 5 : i64} {layer = 1 : i64, microbatch = 1 : i64, phase = "forward"}
    %138 = mtrt.buffer {kind = "activation", offset = 86400 : i64} : memref<1x8x16xf32>
    mtrt.kernel "add" ins(%126, %137 : memref<1x8x16xf32>, memref<1x8x16xf32>) outs(%138 : memref<1x8x16xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "forward"}
    %139 = mtrt.buffer {kind = "activation", offset = 86912 : i64} : memref<1x8x16xf32>
    mtrt.kernel "layer_norm" ins(%138, %6, %7 : memref<1x8x16xf32>, memref<16xf32>, memref<16xf32>) outs(%139 : memref<1x8x16xf32>) {epsilon = 1.000000e-05 : f64} {layer = 1 : i64, microbatch = 1 : i64, phase = "forward"}
    %140 = mtrt.buffer {kind = "activation", offset = 64896 : i64} : memref<1x8x64xf32>
    mtrt.kernel "matmul" ins(%139, %8 : memref<1x8x16xf32>, memref<16x64xf32>) outs(%140 : memref<1x8x64xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "forward"}
    %141 = mtrt.buffer {kind = "activation", offset = 76160 : i64} : memref<1x8x64xf32>
    mtrt.kernel "bias_add" ins(%140, %9 : memref<1x8x64xf32>, memref<64xf32>) outs(%141 : memref<1x8x64xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "forward"}
    %142 = mtrt.buffer {kind = "activation", offset = 78208 : i64} : memref<1x8x64xf32>
    mtrt.kernel "gelu" ins(%141 : memref<1x8x64xf32>) outs(%142 : memref<1x8x64xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "forward"}
    %143 = mtrt.buffer {kind = "activation", offset = 64896 : i64} : memref<1x8x16xf32>
    mtrt.kernel "matmul" ins(%142, %10 : memref<1x8x64xf32>, memref<64x16xf32>) outs(%143 : memref<1x8x16xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "forward"}
    %144 = mtrt.buffer {kind = "activation", offset = 65408 : i64} : memref<1x8x16xf32>
    mtrt.kernel "bias_add" ins(%143, %11 : memref<1x8x16xf32>, memref<16xf32>) outs(%144 : memref<1x8x16xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "forward"}
    %145 = mtrt.buffer {kind = "activation", offset = 64896 : i64} : memref<1x8x16xf32>
    mtrt.kernel "dropout" ins(%144 : memref<1x8x16xf32>) outs(%145 : memref<1x8x16xf32>) {probability = 1.000000e-01 : f64, rng_offset = 128 : i64, rng_stream = 6 : i64} {layer = 1 : i64, microbatch = 1 : i64, phase = "forward"}
    %146 = mtrt.buffer {kind = "activation", offset = 80256 : i64} : memref<1x8x16xf32>
    mtrt.kernel "add" ins(%138, %145 : memref<1x8x16xf32>, memref<1x8x16xf32>) outs(%146 : memref<1x8x16xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "forward"}
    %147 = mtrt.buffer {kind = "activation", offset = 71040 : i64} : memref<1x8x16xf32>
    mtrt.kernel "layer_norm" ins(%146, %12, %13 : memref<1x8x16xf32>, memref<16xf32>, memref<16xf32>) outs(%147 : memref<1x8x16xf32>) {epsilon = 1.000000e-05 : f64} {microbatch = 1 : i64, phase = "forward"}
    %148 = mtrt.buffer {kind = "activation", offset = 64896 : i64} : memref<1x8x64xf32>
    mtrt.kernel "matmul" ins(%147, %14 : memref<1x8x16xf32>, memref<64x16xf32>) outs(%148 : memref<1x8x64xf32>) {transpose_b} {microbatch = 1 : i64, phase = "forward"}
    %149 = mtrt.buffer {kind = "activation", offset = 66944 : i64} : memref<f32>
    mtrt.kernel "cross_entropy" ins(%148, %16 : memref<1x8x64xf32>, memref<1x8xi32>) outs(%149 : memref<f32>) {} {microbatch = 1 : i64, phase = "forward"}
    %150 = mtrt.buffer {kind = "activation", offset = 88896 : i64} : memref<f32>
    mtrt.kernel "add" ins(%79, %149 : memref<f32>, memref<f32>) outs(%150 : memref<f32>) {} {microbatch = 1 : i64, phase = "forward"}
    %151 = mtrt.buffer {kind = "activation", offset = 68992 : i64} : memref<1x8x64xf32>
    mtrt.kernel "cross_entropy_grad" ins(%54, %148, %16 : memref<f32>, memref<1x8x64xf32>, memref<1x8xi32>) outs(%151 : memref<1x8x64xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %152 = mtrt.buffer {kind = "activation", offset = 80768 : i64} : memref<1x8x16xf32>
    mtrt.kernel "matmul" ins(%151, %14 : memref<1x8x64xf32>, memref<64x16xf32>) outs(%152 : memref<1x8x16xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %153 = mtrt.buffer {alias, kind = "activation", offset = 71040 : i64} : memref<8x16xf32>
    %154 = mtrt.buffer {alias, kind = "activation", offset = 68992 : i64} : memref<8x64xf32>
    %155 = mtrt.buffer {kind = "activation", offset = 64896 : i64} : memref<64x16xf32>
    mtrt.kernel "matmul" ins(%154, %153 : memref<8x64xf32>, memref<8x16xf32>) outs(%155 : memref<64x16xf32>) {transpose_a} {microbatch = 1 : i64, phase = "backward"}
    %156 = mtrt.buffer {kind = "activation", offset = 68992 : i64} : memref<64x16xf32>
    mtrt.kernel "add" ins(%84, %155 : memref<64x16xf32>, memref<64x16xf32>) outs(%156 : memref<64x16xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %157 = mtrt.buffer {kind = "activation", offset = 87424 : i64} : memref<1x8x16xf32>
    %158 = mtrt.buffer {kind = "activation", offset = 52608 : i64} : memref<16xf32>
    %159 = mtrt.buffer {kind = "activation", offset = 52672 : i64} : memref<16xf32>
    mtrt.kernel "layer_norm_grad" ins(%152, %146, %12 : memref<1x8x16xf32>, memref<1x8x16xf32>, memref<16xf32>) outs(%157, %158, %159 : memref<1x8x16xf32>, memref<16xf32>, memref<16xf32>) {epsilon = 1.000000e-05 : f64} {microbatch = 1 : i64, phase = "backward"}
    %160 = mtrt.buffer {kind = "gradient", offset = 88704 : i64} : memref<16xf32>
    mtrt.kernel "add" ins(%86, %158 : memref<16xf32>, memref<16xf32>) outs(%160 : memref<16xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %161 = mtrt.buffer {kind = "gradient", offset = 88768 : i64} : memref<16xf32>
    mtrt.kernel "add" ins(%87, %159 : memref<16xf32>, memref<16xf32>) outs(%161 : memref<16xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %162 = mtrt.buffer {kind = "activation", offset = 64896 : i64} : memref<1x8x16xf32>
    mtrt.kernel "dropout" ins(%157 : memref<1x8x16xf32>) outs(%162 : memref<1x8x16xf32>) {probability = 1.000000e-01 : f64, rng_offset = 128 : i64, rng_stream = 6 : i64} {layer = 1 : i64, microbatch = 1 : i64, phase = "backward"}
    %163 = mtrt.buffer {kind = "activation", offset = 52608 : i64} : memref<16xf32>
    mtrt.kernel "bias_add_grad" ins(%162 : memref<1x8x16xf32>) outs(%163 : memref<16xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "backward"}
    %164 = mtrt.buffer {kind = "gradient", offset = 88832 : i64} : memref<16xf32>
    mtrt.kernel "add" ins(%89, %163 : memref<16xf32>, memref<16xf32>) outs(%164 : memref<16xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %165 = mtrt.buffer {kind = "activation", offset = 80256 : i64} : memref<1x8x64xf32>
    mtrt.kernel "matmul" ins(%162, %10 : memref<1x8x16xf32>, memref<64x16xf32>) outs(%165 : memref<1x8x64xf32>) {transpose_b} {layer = 1 : i64, microbatch = 1 : i64, phase = "backward"}
    %166 = mtrt.buffer {alias, kind = "activation", offset = 78208 : i64} : memref<8x64xf32>
    %167 = mtrt.buffer {alias, kind = "activation", offset = 64896 : i64} : memref<8x16xf32>
    %168 = mtrt.buffer {kind = "activation", offset = 52608 : i64} : memref<64x16xf32>
    mtrt.kernel "matmul" ins(%166, %167 : memref<8x64xf32>, memref<8x16xf32>) outs(%168 : memref<64x16xf32>) {transpose_a} {layer = 1 : i64, microbatch = 1 : i64, phase = "backward"}
    %169 = mtrt.buffer {kind = "gradient", offset = 64896 : i64} : memref<64x16xf32>
    mtrt.kernel "add" ins(%93, %168 : memref<64x16xf32>, memref<64x16xf32>) outs(%169 : memref<64x16xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %170 = mtrt.buffer {kind = "activation", offset = 56704 : i64} : memref<1x8x64xf32>
    mtrt.kernel "gelu_grad" ins(%165, %141 : memref<1x8x64xf32>, memref<1x8x64xf32>) outs(%170 : memref<1x8x64xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "backward"}
    %171 = mtrt.buffer {kind = "activation", offset = 52608 : i64} : memref<64xf32>
    mtrt.kernel "bias_add_grad" ins(%170 : memref<1x8x64xf32>) outs(%171 : memref<64xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "backward"}
    %172 = mtrt.buffer {kind = "gradient", offset = 80256 : i64} : memref<64xf32>
    mtrt.kernel "add" ins(%95, %171 : memref<64xf32>, memref<64xf32>) outs(%172 : memref<64xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %173 = mtrt.buffer {kind = "activation", offset = 76160 : i64} : memref<1x8x16xf32>
    mtrt.kernel "matmul" ins(%170, %8 : memref<1x8x64xf32>, memref<16x64xf32>) outs(%173 : memref<1x8x16xf32>) {transpose_b} {layer = 1 : i64, microbatch = 1 : i64, phase = "backward"}
    %174 = mtrt.buffer {alias, kind = "activation", offset = 86912 : i64} : memref<8x16xf32>
    %175 = mtrt.buffer {alias, kind = "activation", offset = 56704 : i64} : memref<8x64xf32>
    %176 = mtrt.buffer {kind = "activation", offset = 52608 : i64} : memref<16x64xf32>
    mtrt.kernel "matmul" ins(%174, %175 : memref<8x16xf32>, memref<8x64xf32>) outs(%176 : memref<16x64xf32>) {transpose_a} {layer = 1 : i64, microbatch = 1 : i64, phase = "backward"}
    %177 = mtrt.buffer {kind = "gradient", offset = 56704 : i64} : memref<16x64xf32>
    mtrt.kernel "add" ins(%99, %176 : memref<16x64xf32>, memref<16x64xf32>) outs(%177 : memref<16x64xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %178 = mtrt.buffer {kind = "activation", offset = 52608 : i64} : memref<1x8x16xf32>
    %179 = mtrt.buffer {kind = "activation", offset = 53120 : i64} : memref<16xf32>
    %180 = mtrt.buffer {kind = "activation", offset = 53184 : i64} : memref<16xf32>
    mtrt.kernel "layer_norm_grad" ins(%173, %138, %6 : memref<1x8x16xf32>, memref<1x8x16xf32>, memref<16xf32>) outs(%178, %179, %180 : memref<1x8x16xf32>, memref<16xf32>, memref<16xf32>) {epsilon = 1.000000e-05 : f64} {layer = 1 : i64, microbatch = 1 : i64, phase = "backward"}
    %181 = mtrt.buffer {kind = "gradient", offset = 80704 : i64} : memref<16xf32>
    mtrt.kernel "add" ins(%101, %179 : memref<16xf32>, memref<16xf32>) outs(%181 : memref<16xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %182 = mtrt.buffer {kind = "gradient", offset = 80768 : i64} : memref<16xf32>
    mtrt.kernel "add" ins(%102, %180 : memref<16xf32>, memref<16xf32>) outs(%182 : memref<16xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %183 = mtrt.buffer {kind = "activation", offset = 55680 : i64} : memref<1x8x16xf32>
    mtrt.kernel "add" ins(%157, %178 : memref<1x8x16xf32>, memref<1x8x16xf32>) outs(%183 : memref<1x8x16xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "backward"}
    %184 = mtrt.buffer {kind = "activation", offset = 53632 : i64} : memref<1x8x16xf32>
    mtrt.kernel "dropout" ins(%183 : memref<1x8x16xf32>) outs(%184 : memref<1x8x16xf32>) {probability = 1.000000e-01 : f64, rng_offset = 128 : i64, rng_stream = 5 : i64} {layer = 1 : i64, microbatch = 1 : i64, phase = "backward"}
    %185 = mtrt.buffer {kind = "activation", offset = 52608 : i64} : memref<16xf32>
    mtrt.kernel "bias_add_grad" ins(%184 : memref<1x8x16xf32>) outs(%185 : memref<16xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "backward"}
    %186 = mtrt.buffer {kind = "gradient", offset = 80832 : i64} : memref<16xf32>
    mtrt.kernel "add" ins(%105, %185 : memref<16xf32>, memref<16xf32>) outs(%186 : memref<16xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %187 = mtrt.buffer {kind = "activation", offset = 54144 : i64} : memref<1x8x16xf32>
    mtrt.kernel "matmul" ins(%184, %4 : memref<1x8x16xf32>, memref<16x16xf32>) outs(%187 : memref<1x8x16xf32>) {transpose_b} {layer = 1 : i64, microbatch = 1 : i64, phase = "backward"}
    %188 = mtrt.buffer {alias, kind = "activation", offset = 85888 : i64} : memref<8x16xf32>
    %189 = mtrt.buffer {alias, kind = "activation", offset = 53632 : i64} : memref<8x16xf32>
    %190 = mtrt.buffer {kind = "activation", offset = 52608 : i64} : memref<16x16xf32>
    mtrt.kernel "matmul" ins(%188, %189 : memref<8x16xf32>, memref<8x16xf32>) outs(%190 : memref<16x16xf32>) {transpose_a} {layer = 1 : i64, microbatch = 1 : i64, phase = "backward"}
    %191 = mtrt.buffer {kind = "gradient", offset = 79232 : i64} : memref<16x16xf32>
    mtrt.kernel "add" ins(%109, %190 : memref<16x16xf32>, memref<16x16xf32>) outs(%191 : memref<16x16xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %192 = mtrt.buffer {kind = "activation", offset = 52608 : i64} : memref<1x2x8x8xf32>
    mtrt.kernel "split_heads" ins(%187 : memref<1x8x16xf32>) outs(%192 : memref<1x2x8x8xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "backward"}
    %193 = mtrt.buffer {kind = "activation", offset = 53120 : i64} : memref<1x2x8x8xf32>
    %194 = mtrt.buffer {kind = "activation", offset = 53632 : i64} : memref<1x2x8x8xf32>
    %195 = mtrt.buffer {kind = "activation", offset = 54144 : i64} : memref<1x2x8x8xf32>
    mtrt.kernel "attention_grad" ins(%192, %130, %131, %132 : memref<1x2x8x8xf32>, memref<1x2x8x8xf32>, memref<1x2x8x8xf32>, memref<1x2x8x8xf32>) outs(%193, %194, %195 : memref<1x2x8x8xf32>, memref<1x2x8x8xf32>, memref<1x2x8x8xf32>) {dropout = 1.000000e-01 : f64, rng_offset = 128 : i64, rng_stream = 4 : i64} {layer = 1 : i64, microbatch = 1 : i64, phase = "backward"}
    %196 = mtrt.buffer {kind = "activation", offset = 60800 : i64} : memref<1x8x48xf32>
    mtrt.kernel "merge_heads" ins(%193, %194, %195 : memref<1x2x8x8xf32>, memref<1x2x8x8xf32>, memref<1x2x8x8xf32>) outs(%196 : memref<1x8x48xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "backward"}
    %197 = mtrt.buffer {kind = "activation", offset = 52608 : i64} : memref<48xf32>
    mtrt.kernel "bias_add_grad" ins(%196 : memref<1x8x48xf32>) outs(%197 : memref<48xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "backward"}
    %198 = mtrt.buffer {kind = "gradient", offset = 80512 : i64} : memref<48xf32>
    mtrt.kernel "add" ins(%115, %197 : memref<48xf32>, memref<48xf32>) outs(%198 : memref<48xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %199 = mtrt.buffer {kind = "activation", offset = 56192 : i64} : memref<1x8x16xf32>
    mtrt.kernel "matmul" ins(%196, %2 : memref<1x8x48xf32>, memref<16x48xf32>) outs(%199 : memref<1x8x16xf32>) {transpose_b} {layer = 1 : i64, microbatch = 1 : i64, phase = "backward"}
    %200 = mtrt.buffer {alias, kind = "activation", offset = 83840 : i64} : memref<8x16xf32>
    %201 = mtrt.buffer {alias, kind = "activation", offset = 60800 : i64} : memref<8x48xf32>
    %202 = mtrt.buffer {kind = "activation", offset = 52608 : i64} : memref<16x48xf32>
    mtrt.kernel "matmul" ins(%200, %201 : memref<8x16xf32>, memref<8x48xf32>) outs(%202 : memref<16x48xf32>) {transpose_a} {layer = 1 : i64, microbatch = 1 : i64, phase = "backward"}
    %203 = mtrt.buffer {kind = "gradient", offset = 76160 : i64} : memref<16x48xf32>
    mtrt.kernel "add" ins(%119, %202 : memref<16x48xf32>, memref<16x48xf32>) outs(%203 : memref<16x48xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %204 = mtrt.buffer {kind = "activation", offset = 52608 : i64} : memref<1x8x16xf32>
    %205 = mtrt.buffer {kind = "activation", offset = 53120 : i64} : memref<16xf32>
    %206 = mtrt.buffer {kind = "activation", offset = 53184 : i64} : memref<16xf32>
    mtrt.kernel "layer_norm_grad" ins(%199, %126, %0 : memref<1x8x16xf32>, memref<1x8x16xf32>, memref<16xf32>) outs(%204, %205, %206 : memref<1x8x16xf32>, memref<16xf32>, memref<16xf32>) {epsilon = 1.000000e-05 : f64} {layer = 1 : i64, microbatch = 1 : i64, phase = "backward"}
    %207 = mtrt.buffer {kind = "gradient", offset = 73088 : i64} : memref<16xf32>
    mtrt.kernel "add" ins(%121, %205 : memref<16xf32>, memref<16xf32>) outs(%207 : memref<16xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %208 = mtrt.buffer {kind = "gradient", offset = 73152 : i64} : memref<16xf32>
    mtrt.kernel "add" ins(%122, %206 : memref<16xf32>, memref<16xf32>) outs(%208 : memref<16xf32>) {} {microbatch = 1 : i64, phase = "backward"}
    %209 = mtrt.buffer {kind = "activation", offset = 53120 : i64} : memref<1x8x16xf32>
    mtrt.kernel "add" ins(%183, %204 : memref<1x8x16xf32>, memref<1x8x16xf32>) outs(%209 : memref<1x8x16xf32>) {} {layer = 1 : i64, microbatch = 1 : i64, phase = "backward"}
    %210 = mtrt.buffer {alias, kind = "activation", offset = 53120 : i64} : memref<1x8x16xf32>
    mtrt.send %209 to 0 {microbatch = 1 : i64, tag = 3 : i64} : memref<1x8x16xf32>
    %211 = mtrt.buffer {kind = "activation", offset = 73216 : i64} : memref<f32>
    mtrt.kernel "scale" ins(%150 : memref<f32>) outs(%211 : memref<f32>) {factor = 5.000000e-01 : f64} {phase = "optimizer"}
    %212 = mtrt.buffer {alias, kind = "activation", offset = 68992 : i64} : memref<64x16xf32>
    mtrt.send %156 to 0 {tag = 5 : i64} : memref<64x16xf32>
    %213 = mtrt.buffer {kind = "activation", offset = 52608 : i64} : memref<64x16xf32>
    %214 = mtrt.buffer {alias, kind = "activation", offset = 52608 : i64} : memref<64x16xf32>
    mtrt.recv %214 from 0 {tag = 4 : i64} : memref<64x16xf32>
    %215 = mtrt.buffer {kind = "gradient", offset = 60800 : i64} : memref<64x16xf32>
    mtrt.kernel "add" ins(%156, %214 : memref<64x16xf32>, memref<64x16xf32>) outs(%215 : memref<64x16xf32>) {} {phase = "optimizer"}
    %216 = mtrt.buffer {kind = "activation", offset = 52608 : i64} : memref<f32>
    mtrt.kernel "sum_squares" ins(%207, %208, %203, %198, %191, %186, %181, %182, %177, %172, %169, %164, %160, %161 : memref<16xf32>, memref<16xf32>, memref<16x48xf32>, memref<48xf32>, memref<16x16xf32>, memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<16x64xf32>, memref<64xf32>, memref<64x16xf32>, memref<16xf32>, memref<16xf32>, memref<16xf32>) outs(%216 : memref<f32>) {} {phase = "optimizer"}
    %217 = mtrt.buffer {kind = "activation", offset = 52672 : i64} : memref<f32>
    mtrt.kernel "all_reduce" ins(%216 : memref<f32>) outs(%217 : memref<f32>) {average = false, grid_axis = 0 : i64} {phase = "optimizer"}
    %218 = mtrt.buffer {kind = "activation", offset = 52608 : i64} : memref<f32>
    mtrt.kernel "sqrt" ins(%217 : memref<f32>) outs(%218 : memref<f32>) {} {phase = "optimizer"}
    %219 = mtrt.buffer {kind = "activation", offset = 52672 : i64} : memref<f32>
    mtrt.kernel "clip_scale" ins(%218, %17 : memref<f32>, memref<f32>) outs(%219 : memref<f32>) {} {phase = "optimizer"}
    %220 = mtrt.buffer {alias, init = {kind = "normal", std = 2.000000e-02 : f64}, kind = "param", name = "wte.weight", offset = 13248 : i64} : memref<64x16xf32>
    %221 = mtrt.buffer {alias, kind = "exp_avg", name = "wte.weight", offset = 17536 : i64} : memref<64x16xf32>
    %222 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "wte.weight", offset = 21632 : i64} : memref<64x16xf32>
    mtrt.kernel "adamw" ins(%14, %215, %18, %19, %20, %21, %22, %23, %24, %25, %219 : memref<64x16xf32>, memref<64x16xf32>, memref<64x16xf32>, memref<64x16xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%220, %221, %222 : memref<64x16xf32>, memref<64x16xf32>, memref<64x16xf32>) {decay} {phase = "optimizer"}
    %223 = mtrt.buffer {alias, init = {kind = "ones"}, kind = "param", name = "h.1.ln_1.weight", offset = 0 : i64} : memref<16xf32>
    %224 = mtrt.buffer {alias, kind = "exp_avg", name = "h.1.ln_1.weight", offset = 26112 : i64} : memref<16xf32>
    %225 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.1.ln_1.weight", offset = 26176 : i64} : memref<16xf32>
    mtrt.kernel "adamw" ins(%0, %207, %26, %27, %20, %21, %22, %23, %24, %25, %219 : memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%223, %224, %225 : memref<16xf32>, memref<16xf32>, memref<16xf32>) {} {phase = "optimizer"}
    %226 = mtrt.buffer {alias, init = {kind = "zeros"}, kind = "param", name = "h.1.ln_1.bias", offset = 64 : i64} : memref<16xf32>
    %227 = mtrt.buffer {alias, kind = "exp_avg", name = "h.1.ln_1.bias", offset = 26240 : i64} : memref<16xf32>
    %228 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.1.ln_1.bias", offset = 26304 : i64} : memref<16xf32>
    mtrt.kernel "adamw" ins(%1, %208, %28, %29, %20, %21, %22, %23, %24, %25, %219 : memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%226, %227, %228 : memref<16xf32>, memref<16xf32>, memref<16xf32>) {} {phase = "optimizer"}
    %229 = mtrt.buffer {alias, init = {kind = "normal", std = 2.000000e-02 : f64}, kind = "param", name = "h.1.attn.c_attn.weight", offset = 128 : i64} : memref<16x48xf32>
    %230 = mtrt.buffer {alias, kind = "exp_avg", name = "h.1.attn.c_attn.weight", offset = 26368 : i64} : memref<16x48xf32>
    %231 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.1.attn.c_attn.weight", offset = 29440 : i64} : memref<16x48xf32>
    mtrt.kernel "adamw" ins(%2, %203, %30, %31, %20, %21, %22, %23, %24, %25, %219 : memref<16x48xf32>, memref<16x48xf32>, memref<16x48xf32>, memref<16x48xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%229, %230, %231 : memref<16x48xf32>, memref<16x48xf32>, memref<16x48xf32>) {decay} {phase = "optimizer"}
    %232 = mtrt.buffer {alias, init = {kind = "zeros"}, kind = "param", name = "h.1.attn.c_attn.bias", offset = 3200 : i64} : memref<48xf32>
    %233 = mtrt.buffer {alias, kind = "exp_avg", name = "h.1.attn.c_attn.bias", offset = 32512 : i64} : memref<48xf32>
    %234 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.1.attn.c_attn.bias", offset = 32704 : i64} : memref<48xf32>
    mtrt.kernel "adamw" ins(%3, %198, %32, %33, %20, %21, %22, %23, %24, %25, %219 : memref<48xf32>, memref<48xf32>, memref<48xf32>, memref<48xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%232, %233, %234 : memref<48xf32>, memref<48xf32>, memref<48xf32>) {} {phase = "optimizer"}
    %235 = mtrt.buffer {alias, init = {kind = "normal", std = 1.000000e-02 : f64}, kind = "param", name = "h.1.attn.c_proj.weight", offset = 3392 : i64} : memref<16x16xf32>
    %236 = mtrt.buffer {alias, kind = "exp_avg", name = "h.1.attn.c_proj.weight", offset = 32896 : i64} : memref<16x16xf32>
    %237 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.1.attn.c_proj.weight", offset = 33920 : i64} : memref<16x16xf32>
    mtrt.kernel "adamw" ins(%4, %191, %34, %35, %20, %21, %22, %23, %24, %25, %219 : memref<16x16xf32>, memref<16x16xf32>, memref<16x16xf32>, memref<16x16xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%235, %236, %237 : memref<16x16xf32>, memref<16x16xf32>, memref<16x16xf32>) {decay} {phase = "optimizer"}
    %238 = mtrt.buffer {alias, init = {kind = "zeros"}, kind = "param", name = "h.1.attn.c_proj.bias", offset = 4416 : i64} : memref<16xf32>
    %239 = mtrt.buffer {alias, kind = "exp_avg", name = "h.1.attn.c_proj.bias", offset = 34944 : i64} : memref<16xf32>
    %240 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.1.attn.c_proj.bias", offset = 35008 : i64} : memref<16xf32>
    mtrt.kernel "adamw" ins(%5, %186, %36, %37, %20, %21, %22, %23, %24, %25, %219 : memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%238, %239, %240 : memref<16xf32>, memref<16xf32>, memref<16xf32>) {} {phase = "optimizer"}
    %241 = mtrt.buffer {alias, init = {kind = "ones"}, kind = "param", name = "h.1.ln_2.weight", offset = 4480 : i64} : memref<16xf32>
    %242 = mtrt.buffer {alias, kind = "exp_avg", name = "h.1.ln_2.weight", offset = 35072 : i64} : memref<16xf32>
    %243 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.1.ln_2.weight", offset = 35136 : i64} : memref<16xf32>
    mtrt.kernel "adamw" ins(%6, %181, %38, %39, %20, %21, %22, %23, %24, %25, %219 : memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%241, %242, %243 : memref<16xf32>, memref<16xf32>, memref<16xf32>) {} {phase = "optimizer"}
    %244 = mtrt.buffer {alias, init = {kind = "zeros"}, kind = "param", name = "h.1.ln_2.bias", offset = 4544 : i64} : memref<16xf32>
    %245 = mtrt.buffer {alias, kind = "exp_avg", name = "h.1.ln_2.bias", offset = 35200 : i64} : memref<16xf32>
    %246 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.1.ln_2.bias", offset = 35264 : i64} : memref<16xf32>
    mtrt.kernel "adamw" ins(%7, %182, %40, %41, %20, %21, %22, %23, %24, %25, %219 : memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%244, %245, %246 : memref<16xf32>, memref<16xf32>, memref<16xf32>) {} {phase = "optimizer"}
    %247 = mtrt.buffer {alias, init = {kind = "normal", std = 2.000000e-02 : f64}, kind = "param", name = "h.1.mlp.c_fc.weight", offset = 4608 : i64} : memref<16x64xf32>
    %248 = mtrt.buffer {alias, kind = "exp_avg", name = "h.1.mlp.c_fc.weight", offset = 35328 : i64} : memref<16x64xf32>
    %249 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.1.mlp.c_fc.weight", offset = 39424 : i64} : memref<16x64xf32>
    mtrt.kernel "adamw" ins(%8, %177, %42, %43, %20, %21, %22, %23, %24, %25, %219 : memref<16x64xf32>, memref<16x64xf32>, memref<16x64xf32>, memref<16x64xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%247, %248, %249 : memref<16x64xf32>, memref<16x64xf32>, memref<16x64xf32>) {decay} {phase = "optimizer"}
    %250 = mtrt.buffer {alias, init = {kind = "zeros"}, kind = "param", name = "h.1.mlp.c_fc.bias", offset = 8704 : i64} : memref<64xf32>
    %251 = mtrt.buffer {alias, kind = "exp_avg", name = "h.1.mlp.c_fc.bias", offset = 43520 : i64} : memref<64xf32>
    %252 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.1.mlp.c_fc.bias", offset = 43776 : i64} : memref<64xf32>
    mtrt.kernel "adamw" ins(%9, %172, %44, %45, %20, %21, %22, %23, %24, %25, %219 : memref<64xf32>, memref<64xf32>, memref<64xf32>, memref<64xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%250, %251, %252 : memref<64xf32>, memref<64xf32>, memref<64xf32>) {} {phase = "optimizer"}
    %253 = mtrt.buffer {alias, init = {kind = "normal", std = 1.000000e-02 : f64}, kind = "param", name = "h.1.mlp.c_proj.weight", offset = 8960 : i64} : memref<64x16xf32>
    %254 = mtrt.buffer {alias, kind = "exp_avg", name = "h.1.mlp.c_proj.weight", offset = 44032 : i64} : memref<64x16xf32>
    %255 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.1.mlp.c_proj.weight", offset = 48128 : i64} : memref<64x16xf32>
    mtrt.kernel "adamw" ins(%10, %169, %46, %47, %20, %21, %22, %23, %24, %25, %219 : memref<64x16xf32>, memref<64x16xf32>, memref<64x16xf32>, memref<64x16xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%253, %254, %255 : memref<64x16xf32>, memref<64x16xf32>, memref<64x16xf32>) {decay} {phase = "optimizer"}
    %256 = mtrt.buffer {alias, init = {kind = "zeros"}, kind = "param", name = "h.1.mlp.c_proj.bias", offset = 13056 : i64} : memref<16xf32>
    %257 = mtrt.buffer {alias, kind = "exp_avg", name = "h.1.mlp.c_proj.bias", offset = 52224 : i64} : memref<16xf32>
    %258 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "h.1.mlp.c_proj.bias", offset = 52288 : i64} : memref<16xf32>
    mtrt.kernel "adamw" ins(%11, %164, %48, %49, %20, %21, %22, %23, %24, %25, %219 : memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%256, %257, %258 : memref<16xf32>, memref<16xf32>, memref<16xf32>) {} {phase = "optimizer"}
    %259 = mtrt.buffer {alias, init = {kind = "ones"}, kind = "param", name = "ln_f.weight", offset = 13120 : i64} : memref<16xf32>
    %260 = mtrt.buffer {alias, kind = "exp_avg", name = "ln_f.weight", offset = 52352 : i64} : memref<16xf32>
    %261 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "ln_f.weight", offset = 52416 : i64} : memref<16xf32>
    mtrt.kernel "adamw" ins(%12, %160, %50, %51, %20, %21, %22, %23, %24, %25, %219 : memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%259, %260, %261 : memref<16xf32>, memref<16xf32>, memref<16xf32>) {} {phase = "optimizer"}
    %262 = mtrt.buffer {alias, init = {kind = "zeros"}, kind = "param", name = "ln_f.bias", offset = 13184 : i64} : memref<16xf32>
    %263 = mtrt.buffer {alias, kind = "exp_avg", name = "ln_f.bias", offset = 52480 : i64} : memref<16xf32>
    %264 = mtrt.buffer {alias, kind = "exp_avg_sq", name = "ln_f.bias", offset = 52544 : i64} : memref<16xf32>
    mtrt.kernel "adamw" ins(%13, %161, %52, %53, %20, %21, %22, %23, %24, %25, %219 : memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%262, %263, %264 : memref<16xf32>, memref<16xf32>, memref<16xf32>) {} {phase = "optimizer"}
    mtrt.output "loss", %211 : memref<f32>
    mtrt.output "grad_norm", %218 : memref<f32>
  }
}


/* spank_iosonar.so: the Slurm SPANK plugin that puts iosonar's tracer into
 * every task of a job (docs/deployment.md, "The Slurm plugin").
 *
 * plugstack.conf (a site default, arguments optional):
 *   optional /usr/lib/iosonar/spank_iosonar.so default=on tracer=/usr/lib/libiosonar-trace.so output=agent
 * users:
 *   sbatch --iosonar=off job.sh     (or srun --iosonar=off ...; --iosonar alone means on)
 *
 * In each task, just before exec (slurm_spank_task_init, as the user):
 *   on:  LD_PRELOAD gets the tracer in front (once), IOSONAR_OUTPUT the site's
 *        output unless the job set one, IOSONAR_JOB_ID the Slurm job id, and
 *        IOSONAR_RING_DIR ring_root/iosonar-ring-UID when ring_root= is given;
 *   off: the tracer is taken out of LD_PRELOAD (a module may have put it there)
 *        and IOSONAR_DISABLE=1 set, so nothing of the job is traced.
 * The dynamic loader applies LD_PRELOAD; a static program never reads it, and
 * a setuid one runs in secure mode, where the loader ignores a preload path
 * outside its trusted directories: both run as they would without iosonar.
 * The plugin never fails a job: a bad argument in plugstack.conf is an error at
 * slurmd start (slurm_spank_init), a bad --iosonar value is refused by srun or
 * sbatch, and nothing it does at task start can stop the task. */
#include <slurm/spank.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

SPANK_PLUGIN(iosonar, 1);

#define IOSONAR_PATH_MAX 1024
#define IOSONAR_ENV_MAX 8192

static int site_default_on = 1;  /* default= */
static int user_choice = -1;     /* --iosonar: -1 not given, 0 off, 1 on */
static char tracer[IOSONAR_PATH_MAX] = IOSONAR_DEFAULT_TRACER;
static char output[IOSONAR_PATH_MAX] = "agent";
static char ring_root[IOSONAR_PATH_MAX] = "";

static int parse_on_off(const char* v, int* out) {
  if (v == NULL || *v == '\0' || strcmp(v, "on") == 0 || strcmp(v, "yes") == 0 || strcmp(v, "1") == 0) {
    *out = 1;
    return 0;
  }
  if (strcmp(v, "off") == 0 || strcmp(v, "no") == 0 || strcmp(v, "0") == 0) {
    *out = 0;
    return 0;
  }
  return -1;
}

static int option_cb(int val, const char* optarg, int remote) {
  (void)val;
  (void)remote;
  if (parse_on_off(optarg, &user_choice) != 0) {
    slurm_error("iosonar: --iosonar takes on or off, not '%s'", optarg);
    return -1;
  }
  return 0;
}

/* Registered from slurm_spank_init (spank_option_register): sbatch (the
 * allocator context) does not take options from a static spank_options table. */
static struct spank_option iosonar_option = {
    "iosonar", "[on|off]",
    "Trace this job's I/O with iosonar (on) or not (off); the site's default applies when not given.", 2, 0,
    (spank_opt_cb_f)option_cb};

static int copy_arg(char* dst, const char* arg, const char* key) {
  size_t n = strlen(key);
  const char* v = arg + n;
  if (strlen(v) >= IOSONAR_PATH_MAX || *v == '\0') {
    slurm_error("iosonar: plugstack.conf argument %s needs a value shorter than %d bytes", key, IOSONAR_PATH_MAX);
    return -1;
  }
  strcpy(dst, v);
  return 0;
}

int slurm_spank_init(spank_t sp, int ac, char** av) {
  if (spank_option_register(sp, &iosonar_option) != ESPANK_SUCCESS) {
    slurm_error("iosonar: cannot register --iosonar");
    return -1;
  }
  for (int i = 0; i < ac; ++i) {
    const char* a = av[i];
    if (strncmp(a, "default=", 8) == 0) {
      if (parse_on_off(a + 8, &site_default_on) != 0 || a[8] == '\0') {
        slurm_error("iosonar: plugstack.conf: default= takes on or off, not '%s'", a + 8);
        return -1;
      }
    } else if (strncmp(a, "tracer=", 7) == 0) {
      if (copy_arg(tracer, a, "tracer=") != 0) return -1;
      if (tracer[0] != '/') {
        slurm_error("iosonar: plugstack.conf: tracer= must be an absolute path, not '%s'", tracer);
        return -1;
      }
    } else if (strncmp(a, "output=", 7) == 0) {
      if (copy_arg(output, a, "output=") != 0) return -1;
    } else if (strncmp(a, "ring_root=", 10) == 0) {
      if (copy_arg(ring_root, a, "ring_root=") != 0) return -1;
    } else {
      slurm_error("iosonar: plugstack.conf: unknown argument '%s' (default=, tracer=, output=, ring_root=)", a);
      return -1;
    }
  }
  return 0;
}

/* LD_PRELOAD (space- or colon-separated) without any element naming TRACER. */
static void without_tracer(const char* in, char* out, size_t cap) {
  size_t o = 0;
  out[0] = '\0';
  const char* p = in;
  while (*p) {
    while (*p == ' ' || *p == ':') ++p;
    const char* b = p;
    while (*p && *p != ' ' && *p != ':') ++p;
    size_t n = (size_t)(p - b);
    if (n == 0) break;
    if (n == strlen(tracer) && strncmp(b, tracer, n) == 0) continue;
    if (o + n + 2 >= cap) break;
    if (o) out[o++] = ':';
    memcpy(out + o, b, n);
    o += n;
    out[o] = '\0';
  }
}

int slurm_spank_task_init(spank_t sp, int ac, char** av) {
  (void)ac;
  (void)av;
  if (!spank_remote(sp)) return 0;
  int on = user_choice >= 0 ? user_choice : site_default_on;
  char cur[IOSONAR_ENV_MAX], rest[IOSONAR_ENV_MAX];
  if (spank_getenv(sp, "LD_PRELOAD", cur, sizeof cur) != ESPANK_SUCCESS) cur[0] = '\0';
  without_tracer(cur, rest, sizeof rest);
  if (!on) {
    if (rest[0]) spank_setenv(sp, "LD_PRELOAD", rest, 1);
    else spank_unsetenv(sp, "LD_PRELOAD");
    spank_setenv(sp, "IOSONAR_DISABLE", "1", 1);
    return 0;
  }
  char preload[IOSONAR_ENV_MAX];
  if (rest[0]) snprintf(preload, sizeof preload, "%s:%s", tracer, rest);
  else snprintf(preload, sizeof preload, "%s", tracer);
  spank_setenv(sp, "LD_PRELOAD", preload, 1);
  spank_setenv(sp, "IOSONAR_OUTPUT", output, 0); /* the job's own choice stays */
  spank_unsetenv(sp, "IOSONAR_DISABLE");
  uint32_t job = 0;
  if (spank_get_item(sp, S_JOB_ID, &job) == ESPANK_SUCCESS && job != 0) {
    char id[32];
    snprintf(id, sizeof id, "%u", (unsigned)job);
    spank_setenv(sp, "IOSONAR_JOB_ID", id, 1);
  }
  if (ring_root[0]) {
    uid_t uid = 0;
    if (spank_get_item(sp, S_JOB_UID, &uid) == ESPANK_SUCCESS) {
      char dir[IOSONAR_PATH_MAX + 64];
      snprintf(dir, sizeof dir, "%s/iosonar-ring-%u", ring_root, (unsigned)uid);
      spank_setenv(sp, "IOSONAR_RING_DIR", dir, 1);
    }
  }
  return 0;
}

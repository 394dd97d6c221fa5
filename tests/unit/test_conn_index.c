/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_conn_index: a worker's index of live connections by id (worker_find_conn), against a
 * plain array: 20 000 connections added and taken out in random order (ids in runs, as
 * connections are numbered, and scattered), each lookup answering what the array says.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/conn.h"
#include "net/worker.h"
#include "testlib.h"

#define N 20000

static conn_t conns[N];
static int live[N];

static void check_all(worker_t *w)
{
    int wrong = 0;
    for (int i = 0; i < N; i++)
        wrong += worker_find_conn(w, conns[i].id) != (live[i] ? &conns[i] : NULL);
    CHECK(wrong == 0);
}

static void test_index_agrees_with_a_list(void)
{
    worker_t w;
    memset(&w, 0, sizeof(w));
    list_init(&w.conns);
    srand(7);
    for (int i = 0; i < N; i++) /* runs of consecutive ids with gaps, as on a busy server */
        conns[i].id = (uint64_t)i + 1 + (uint64_t)(i / 100) * 977;
    CHECK(worker_find_conn(&w, 1) == NULL); /* an empty worker */
    for (int round = 0; round < 4; round++) {
        for (int k = 0; k < N; k++) {
            int i = rand() % N;
            if (live[i])
                worker_unindex_conn(&w, &conns[i]);
            else
                worker_index_conn(&w, &conns[i]);
            live[i] = !live[i];
        }
        check_all(&w);
        CHECK(worker_find_conn(&w, 0) == NULL && worker_find_conn(&w, UINT64_MAX) == NULL);
    }
    for (int i = 0; i < N; i++) /* all taken out: the table is empty again */
        if (live[i]) {
            worker_unindex_conn(&w, &conns[i]);
            live[i] = 0;
        }
    CHECK(w.conn_index_len == 0);
    check_all(&w);
    worker_unindex_all(&w);
}

int main(void)
{
    RUN(test_index_agrees_with_a_list);
    return testlib_done();
}
